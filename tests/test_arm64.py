"""The arm64 image on QEMU's virt machine (TCG) with AAVMF, its UEFI: the
ISO as CD, as USB stick and as a stick made by write-stick to a root shell
on the PL011 console (ttyAMA0) with no key pressed, and the unattended
repair with its undo file, as on x86_64."""
import os
import re

import pytest

from harness import ARM64_OUT
from test_rescue_fsck import repair_with_undo


@pytest.fixture(scope="module", autouse=True)
def arm64_built():
    """make builds arm64 beside x86_64 (make test runs make first)."""
    iso = [f for f in os.listdir(ARM64_OUT) if f.endswith("-arm64.iso")] if os.path.isdir(ARM64_OUT) else []
    assert iso, f"no arm64 ISO in {ARM64_OUT}; run make (it builds both architectures)"


def shells_on(g):
    """The terminals a shell reads from."""
    return g.check("for p in /proc/[0-9]*; do [ \"$(cat $p/comm)\" = sh ] && readlink $p/fd/0; done | sort -u")


@pytest.mark.parametrize("medium", ["cd", "usb"])
def test_arm64_iso_boots_to_shell(guest, medium):
    g = guest(f"arm64-uefi-{medium}", ["--arch", "arm64", "--medium", medium], boot_timeout=240)
    g.wait_shell()
    # systemd-boot's default entry started after its timeout: PL011 console.
    cmdline = g.check("cat /proc/cmdline")
    assert "console=ttyAMA0,115200n8" in cmdline, cmdline
    assert g.check("uname -m").strip() == "aarch64"
    assert "extrescue" in g.check("uname -r")
    assert g.check("[ -d /sys/firmware/efi ] && echo efi").strip() == "efi"
    # Secure Boot is off: the kernel is not locked down (patch 0007 ties it to Secure Boot).
    assert "[none]" in g.check("cat /sys/kernel/security/lockdown")
    assert "/dev/ttyAMA0" in shells_on(g)
    # Our programs and the components run: the same tools as on x86_64.
    for probe in ("e2fsck -V", "mdadm --version", "lvm version", "cryptsetup --version",
                  "sgdisk --version", "smartctl --version", "extscan --help"):
        status, out = g.run(f"{probe} 2>&1")
        assert status == 0, f"{probe}: {out}"
    # Nothing of the boot medium is mounted; the banner named the ext volumes.
    assert not re.search(r"^/dev/(sd|vd|nvme|sr)", g.check("cat /proc/mounts"), re.M)
    assert g.poweroff() == 0
    g.assert_no_fatal()


def test_arm64_stick_made_by_write_stick(guest, tmp_path):
    """The arm64 ISO made into a stick by write-stick, with the owner's key
    and parameters: its tables verify and the ISO's bytes are kept; AAVMF
    boots it, the boot finds its own EXTRESCUE partition by the boot
    loader's word, takes the stick's parameters, and the stick's key opens SSH."""
    from test_network import free_port, network_ready, ssh
    from test_stick import assert_iso_kept, assert_tables_verify, iso, owner_stick
    image = iso(ARM64_OUT)
    stick, key = owner_stick(tmp_path, "arm64", cmdline="ip=dhcp rescue.undo=none", image=image)
    assert_tables_verify(stick)
    assert_iso_kept(stick, image)
    port = free_port()
    g = guest("arm64-stick", ["--arch", "arm64", "--medium", "usb", "--iso", stick,
                              "--nic", f"virtio-net-pci,fwd={port}:22"], boot_timeout=300)
    g.wait_shell()
    summary = g.check("cat /run/extrescue/stick/summary")
    assert "Stick: /dev/sda2 (EXTRESCUE on the disk this system booted from)" in summary, summary
    network_ready(g)
    r = ssh(key, port, "uname -m; cat /run/extrescue/param/undo", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["aarch64", "none"], r.stdout
    assert g.poweroff() == 0
    g.assert_no_fatal()


def test_arm64_repair_with_undo(guest, tmp_path):
    repair_with_undo(guest, tmp_path, "arm64-fsck-repair", arch="arm64", timeout=300)


def test_arm64_uefi_http_boot_of_the_unified_image(guest):
    """AAVMF's HTTP boot fetches the arm64 extrescue.efi from a server on
    the host, which starts with the arm64 menu's default entry."""
    from test_netboot import Server
    server = Server(os.path.join(ARM64_OUT, "netboot", "arm64"))
    try:
        g = guest("arm64-netboot-http", ["--arch", "arm64", "--mem", "768", "--nic", "virtio-net-pci",
                                         "--netboot", f"{server.base}/extrescue.efi"], boot_timeout=300)
        g.wait_shell()
        assert "/extrescue.efi" in server.gets, server.gets
        assert g.check("cat /proc/cmdline").strip() == "console=tty0 console=ttyAMA0,115200n8"
        assert g.check("uname -m").strip() == "aarch64"
        g.assert_no_fatal()
    finally:
        server.close()


def test_arm64_uefi_pxe_of_the_unified_image(guest):
    """AAVMF's PXE fetches the arm64 extrescue.efi by TFTP from
    out/arm64/netboot/arm64/, as the dnsmasq example answers architecture 11."""
    g = guest("arm64-netboot-tftp", ["--arch", "arm64", "--mem", "768", "--nic", "virtio-net-pci",
                                     "--netboot", "extrescue.efi"], boot_timeout=360)
    g.wait_shell()
    assert "Start PXE over IPv4" in g.serial_log()
    assert g.check("cat /proc/cmdline").strip() == "console=tty0 console=ttyAMA0,115200n8"
    assert g.check("uname -m").strip() == "aarch64"
    g.assert_no_fatal()


def test_arm64_secure_boot_with_the_key_enrolled(guest):
    """AAVMF with Microsoft's keys and Secure Boot on starts Debian's arm64
    shim, which starts our signed systemd-boot and unified image once the
    project certificate is a Machine Owner Key; the kernel locks itself
    down from the stub's word (patch 0007)."""
    from test_secureboot import assert_locked_down
    cert = os.path.join(ARM64_OUT, "extrescue-mok.cer")
    g = guest("arm64-sb-cd", ["--arch", "arm64", "--secureboot", "--mok", cert, "--medium", "cd"],
              boot_timeout=300)
    g.wait_shell()
    assert_locked_down(g)
    assert g.check("cat /proc/cmdline").split() == ["console=tty0", "console=ttyAMA0,115200n8"]
    g.assert_no_fatal()


def test_arm64_secure_boot_without_the_key_runs_nothing_of_ours(guest):
    from test_secureboot import wait_screen
    g = guest("arm64-sb-no-mok", ["--arch", "arm64", "--secureboot", "--medium", "cd"], boot_timeout=300)
    screen = wait_screen(g, r"Verification failed: \(0x1A\) Security Violation", 300, "shim's refusal")
    g.kill()
    assert "Linux version" not in screen, screen[-2000:]
