"""Secure Boot: OVMF's Secure Boot build with Microsoft's keys starts
Debian's signed shim, which starts our systemd-boot and unified kernel image
once the project certificate is a Machine Owner Key. With it the image
works locked down; without it, or with an image signed by another key,
nothing of ours runs. (Secure Boot off: test_boot's UEFI boots.)"""
import os
import re
import shutil
import subprocess
import time

import pexpect

from disks import blank, make_fs
from harness import OUT, TOP, host, pe_section, scaled
from stacks import LUKS_FORMAT, PASS
from test_network import free_port, keypair, ssh

CERT = os.path.join(OUT, "extrescue-mok.cer")
SECURE_BOOT_VAR = "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
# Secure Boot with SMM is slower under TCG than the plain UEFI build.
BOOT_TIMEOUT = 240
ANSI = re.compile(r"\x1b\[[0-9;=?]*[A-Za-z]")


def sb_args(medium, mok=CERT):
    args = ["--firmware", "uefi", "--secureboot", "--medium", medium]
    return args + (["--mok", mok] if mok else [])


def assert_locked_down(g):
    """Secure Boot on as the guest's firmware says, and the kernel locked down."""
    g.check("mkdir -p /tmp/efivars && mount -t efivarfs -o ro efivarfs /tmp/efivars")
    state = g.check(f"cat /tmp/efivars/{SECURE_BOOT_VAR} | od -An -tu1").split()[4:]
    g.check("umount /tmp/efivars")
    assert state == ["1"], f"SecureBoot variable's value is {state!r}"
    assert "[integrity]" in g.check("cat /sys/kernel/security/lockdown")
    assert "Kernel is locked down from EFI Secure Boot mode" in g.check("dmesg")
    # Not even root can lift it.
    status, out = g.run("echo none > /sys/kernel/security/lockdown")
    assert status != 0 and "not permitted" in out, out
    assert "[integrity]" in g.check("cat /sys/kernel/security/lockdown")


def test_cd_with_the_key_enrolled_works_locked_down(guest, tmp_path):
    folder = str(tmp_path)
    data = str(tmp_path / "data.img")
    make_fs(data, "64M")
    crypt = blank(str(tmp_path / "crypt.img"), "40M")
    key, pub = keypair(folder, "admin")
    port = free_port()
    g = guest("sb-cd", sb_args("cd") + ["--mem", "1024", "--disk", f"{data},if=virtio-blk,rw",
                                        "--disk", f"{crypt},if=virtio-blk,rw",
                                        "--nic", f"virtio-net-pci,fwd={port}:22"], boot_timeout=BOOT_TIMEOUT)
    g.wait_shell()
    assert_locked_down(g)
    # The signed command line is the default entry's.
    assert g.check("cat /proc/cmdline").split() == ["console=tty0", "console=ttyS0,115200n8"]

    # The tools: extscan sees the volume, e2fsck checks it.
    assert re.search(r"vda\s.*ext4", g.check("extscan")), g.check("extscan")
    g.check("e2fsck -fn /dev/vda", timeout=120)

    # LUKS through dm-crypt, opened by rescue-assemble read-only.
    g.check(f"printf %s '{PASS}' | {LUKS_FORMAT} /dev/vdb && "
            f"printf %s '{PASS}' | cryptsetup open --key-file=- /dev/vdb sbt && "
            "mkfs.ext4 -q /dev/mapper/sbt && cryptsetup close sbt", timeout=240)
    out = g.check(f"printf '%s\\n' '{PASS}' | rescue-assemble", timeout=240)
    assert re.search(r"luks +/dev/vdb -> /dev/mapper/luks-[0-9a-f-]+: opened read-only", out), out
    g.check("e2fsck -fn /dev/mapper/luks-*", timeout=120)

    # SSH, started from the shell since the signed command line has no key.
    g.check("rescue-net dhcp eth0", timeout=120)
    said = g.check(f"rescue-net ssh '{pub}'", timeout=120)
    assert "SSH on port 22 for 1 key(s)" in said, said
    r = ssh(key, port, "cat /sys/kernel/security/lockdown", folder)
    assert r.returncode == 0 and "[integrity]" in r.stdout, r.stderr
    # Again: the keys are replaced, the server stays.
    assert "SSH keys replaced: 1 key(s)" in g.check(f"rescue-net ssh '{pub}'")
    assert ssh(key, port, "true", folder).returncode == 0
    assert g.poweroff() == 0
    g.assert_no_fatal()


def test_usb_with_the_key_enrolled_and_each_entry_does_what_it_says(guest):
    """The stick boots too; choosing "check" in the menu gives that entry's
    options even though the stub boots the signed (default) command line."""
    g = guest("sb-usb", sb_args("usb"), boot_timeout=BOOT_TIMEOUT)
    g.expect([r"check all ext volumes"], scaled(BOOT_TIMEOUT), "systemd-boot's menu")
    g.child.send("4")      # the fourth entry by its number: check all ext volumes
    g.child.send("\r")
    g.wait_shell()
    assert_locked_down(g)
    assert "rescue.fsck" not in g.check("cat /proc/cmdline")
    assert "rescue.fsck=check" in g.check("cat /run/extrescue/entry-cmdline")
    assert g.check("/lib/extrescue/system/kernel-param fsck").strip() == "check"
    assert "unattended rescue.fsck=check" in g.serial_log()
    assert g.poweroff() == 0
    g.assert_no_fatal()


def test_uefi_pxe_through_shim(guest):
    """Network boot with Secure Boot on: the boot file is shim, which fetches
    grubx64.efi (the signed unified image) from the same TFTP folder."""
    g = guest("sb-pxe", ["--firmware", "uefi", "--secureboot", "--mok", CERT, "--mem", "768",
                         "--netboot", "shimx64.efi"], boot_timeout=BOOT_TIMEOUT)
    g.wait_shell()
    assert "Fetching Netboot Image grubx64.efi" in ANSI.sub("", g.serial_log())
    assert_locked_down(g)
    assert g.poweroff() == 0
    g.assert_no_fatal()


def wait_screen(g, pattern, timeout, what):
    """Waits until PATTERN is on the firmware's screen as the serial log has
    it, cursor movements and colours taken out (shim and MokManager draw
    boxes, so their text is never one run of characters)."""
    deadline = time.monotonic() + scaled(timeout)
    while time.monotonic() < deadline:
        try:
            g.child.expect([pexpect.TIMEOUT], timeout=1)    # keeps QEMU's output flowing
        except pexpect.EOF:
            break
        screen = ANSI.sub("", g.serial_log())
        if re.search(pattern, screen):
            return screen
    raise AssertionError(f"{g.name}: no {what} ({pattern!r}) on the screen; log {g.log_path}")


def test_without_the_key_nothing_of_ours_runs(guest):
    g = guest("sb-no-mok", sb_args("cd", mok=None), boot_timeout=BOOT_TIMEOUT)
    # shim cannot verify grubx64.efi (our systemd-boot): an error box, and
    # after OK shim starts MokManager, where the key can be enrolled.
    wait_screen(g, r"Verification failed: \(0x1A\) Security Violation", BOOT_TIMEOUT, "shim's refusal")
    g.child.send("\r")
    screen = wait_screen(g, r"Press any key to perform MOK management", 60, "MokManager")
    g.kill()
    assert "Linux version" not in screen and "extrescue" not in screen.split("Security Violation")[0], screen[-2000:]


def esp_offset(iso):
    """Byte offset of the ESP image (FAT, volume label EXTRESC-ESP) in the ISO."""
    with open(iso, "rb") as f:
        data = f.read()
    for off in range(0, len(data), 2048):
        sector = data[off:off + 512]
        if sector[510:512] == b"\x55\xaa" and b"EXTRESC-ESPFAT" in sector[0x2b:0x5a]:
            return off
    raise AssertionError(f"{iso}: no FAT image with the label EXTRESC-ESP")


def test_tampered_image_signed_with_another_key_is_refused(guest, tmp_path):
    iso = str(tmp_path / "tampered.iso")
    shutil.copyfile(max((os.path.join(OUT, f) for f in os.listdir(OUT) if f.endswith("-x86_64.iso")),
                        key=os.path.getmtime), iso)
    image = f"{iso}@@{esp_offset(iso)}"
    uki = str(tmp_path / "extrescue.efi")
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    subprocess.run(["mcopy", "-n", "-i", image, "::/EFI/extrescue/extrescue.efi", uki], check=True, env=env)
    # One byte of the initramfs changed, the signature made again with a key
    # that is not enrolled.
    subprocess.run(["sbattach", "--remove", uki], check=True, capture_output=True)
    with open(uki, "rb") as f:
        off, size = pe_section(f.read(), ".initrd")
    with open(uki, "r+b") as f:
        f.seek(off + size // 2)
        byte = f.read(1)
        f.seek(off + size // 2)
        f.write(bytes([byte[0] ^ 0xff]))
    other_key, other_cert = str(tmp_path / "other.key"), str(tmp_path / "other.crt")
    subprocess.run(["openssl", "req", "-new", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=not the extrescue key/", "-keyout", other_key, "-out", other_cert],
                   check=True, capture_output=True)
    subprocess.run(["sbsign", "--key", other_key, "--cert", other_cert, "--output", uki, uki],
                   check=True, capture_output=True)
    subprocess.run(["mcopy", "-o", "-i", image, uki, "::/EFI/extrescue/extrescue.efi"], check=True, env=env)

    g = guest("sb-tampered", sb_args("cd") + ["--iso", iso], boot_timeout=BOOT_TIMEOUT)
    # shim starts our systemd-boot; its load of the image fails through shim's check
    # (systemd-boot 257 says "Security violation"; 252 said "Security Policy Violation").
    screen = wait_screen(g, r"Error loading \\EFI\\extrescue\\extrescue\.efi: Security violation",
                         BOOT_TIMEOUT, "systemd-boot refusing the image")
    g.kill()
    assert "Linux version" not in screen


def test_signing_is_reproducible_and_a_wrong_key_pair_stops_the_build(tmp_path):
    """Two signatures of one file with one key are the same bytes (sbsign
    stamps the signing time: the commit's is used, on a clock that stands
    still, so the second signing, which starts a second late as on a loaded
    machine, stamps the same time); a key and a certificate that do not
    belong together stop make with one line naming both."""
    key, cert = (os.path.expanduser(f"~/.cache/extrescue/secureboot/extrescue-sb.{x}") for x in ("key", "crt"))
    key = os.environ.get("EXTRESCUE_SB_KEY", key)
    cert = os.environ.get("EXTRESCUE_SB_CERT", cert)
    src = os.path.join(OUT, "build/boot-debs/usr/lib/systemd/boot/efi/systemd-bootx64.efi")
    late = tmp_path / "late"
    late.mkdir()
    (late / "sbsign").write_text(f'#!/bin/sh\nsleep 1.2\nexec {shutil.which("sbsign")} "$@"\n')
    (late / "sbsign").chmod(0o755)
    outs = []
    for n, path in ((1, os.environ["PATH"]), (2, f"{late}:{os.environ['PATH']}")):
        out = str(tmp_path / f"signed{n}.efi")
        r = host([os.path.join(TOP, "scripts/sb-sign"), key, cert, src, out],
                 env=dict(os.environ, SOURCE_DATE_EPOCH="1700000000", PATH=path))
        assert r.returncode == 0, r.stderr
        outs.append(open(out, "rb").read())
    assert outs[0] == outs[1], "two signatures of the same file differ"
    sig = str(tmp_path / "signed2.p7")
    assert host(["sbattach", "--detach", sig, str(tmp_path / "signed2.efi")]).returncode == 0
    parsed = host(["openssl", "asn1parse", "-inform", "DER", "-in", sig]).stdout
    assert re.search(r"signingTime\n.*\n.*UTCTIME\s*:231114221320Z", parsed), parsed
    assert host(["sbverify", "--cert", cert, str(tmp_path / "signed1.efi")]).returncode == 0

    other_key = str(tmp_path / "other.key")
    host(["openssl", "genpkey", "-algorithm", "RSA", "-out", other_key])
    r = host(["make", "-C", TOP, f"OUT={tmp_path}/out", f"EXTRESCUE_SB_KEY={other_key}",
              f"EXTRESCUE_SB_CERT={cert}", "secureboot-key"])
    assert r.returncode != 0
    said = [line for line in r.stderr.splitlines() if line.startswith("sb-key:")]
    assert said == [f"sb-key: {other_key} and {cert} do not belong together (different public keys)"], r.stderr
