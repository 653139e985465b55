"""The ISO boots four ways (BIOS/UEFI x CD/USB stick) to a working root shell."""
import re
import time

import pexpect
import pytest


WAYS = [("bios", "cd"), ("bios", "usb"), ("uefi", "cd"), ("uefi", "usb")]


@pytest.mark.parametrize("firmware,medium", WAYS, ids=[f"{f}-{m}" for f, m in WAYS])
def test_iso_boots_to_shell(guest, firmware, medium):
    g = guest(f"boot-{firmware}-{medium}", ["--firmware", firmware, "--medium", medium])
    g.wait_shell()

    # The default menu entry names both consoles.
    cmdline = g.check("cat /proc/cmdline")
    assert "console=tty0" in cmdline and "console=ttyS0,115200n8" in cmdline, cmdline

    # Commands run and their exit status arrives intact, both ways.
    assert "extrescue" in g.check("uname -r")
    status, out = g.run("ls /nonexistent")
    assert status != 0 and "No such file" in out
    assert g.run("exit_with() { return $1; }; exit_with 7")[0] == 7

    # Pseudo filesystems are up; nothing on a disk is mounted.
    mounts = g.check("cat /proc/mounts")
    for fs in ("proc /proc", "sysfs /sys", "devtmpfs /dev", "tmpfs /run"):
        assert fs in mounts, mounts
    assert not re.search(r"^/dev/(sd|vd|nvme|hd|sr)", mounts, re.M), mounts

    # A root shell waits on the VGA console as well as on ttyS0.
    ttys = g.check("for p in /proc/[0-9]*; do [ \"$(cat $p/comm)\" = sh ] && readlink $p/fd/0; done | sort -u")
    assert "/dev/ttyS0" in ttys and "/dev/tty1" in ttys, ttys

    # On firmware boots the firmware found the boot medium through the right path.
    if firmware == "uefi":
        assert g.check("[ -d /sys/firmware/efi ] && echo efi").strip() == "efi"
    else:
        assert g.run("[ -d /sys/firmware/efi ]")[0] != 0

    assert g.poweroff() == 0
    g.assert_no_fatal()


def test_serial_only_console(guest):
    """With only ttyS0 on the command line, no shell is started on the VGA console.
    rescue.settle with a leading zero still waits for the disks and says so
    (the shell took 08 for a bad octal number, and the wait ended there
    without a word)."""
    g = guest("direct-serial-only", ["--direct", "--append", "console=ttyS0,115200n8 rescue.settle=08"])
    g.wait_shell()
    ttys = g.check("for p in /proc/[0-9]*; do [ \"$(cat $p/comm)\" = sh ] && readlink $p/fd/0; done | sort -u")
    assert "/dev/ttyS0" in ttys and "/dev/tty1" not in ttys, ttys
    assert "block devices settled after" in g.serial_log(), g.serial_log()[-2000:]
    assert g.poweroff() == 0
    g.assert_no_fatal()


def test_disks_appear_and_are_untouched(guest, tmp_path):
    """Attached disks are listed in the banner; booting writes nothing to them."""
    import hashlib
    import subprocess

    disk = tmp_path / "data.img"
    subprocess.run(["truncate", "-s", "64M", str(disk)], check=True)
    subprocess.run(["mke2fs", "-q", "-t", "ext4", "-F", str(disk)], check=True)
    before = hashlib.sha256(disk.read_bytes()).hexdigest()
    g = guest("direct-disk", ["--direct", "--disk", f"{disk},if=virtio-blk,rw"])
    g.wait_shell()
    assert re.search(r"vda\s+64 MiB", g.serial_log()), "banner does not list vda"
    assert g.check("cat /sys/class/block/vda/size").strip() == str(64 * 2048)
    assert g.poweroff() == 0
    g.assert_no_fatal()
    assert hashlib.sha256(disk.read_bytes()).hexdigest() == before, "the boot wrote to an attached disk"


def test_a_kernel_panic_ends_the_wait_at_once(guest):
    """The harness stops waiting when the kernel panics, whatever it waited
    for (a panic at boot once cost an unattended test its 15 minutes)."""
    g = guest("direct-panic", ["--direct", "--append", "console=ttyS0,115200n8 panic=0"])
    g.wait_shell()
    g.child.sendline("echo c > /proc/sysrq-trigger")
    started = time.monotonic()
    with pytest.raises(AssertionError, match="the kernel panicked while waiting for the power-off that never comes"):
        g.expect([pexpect.EOF], 600, "the power-off that never comes")
    assert time.monotonic() - started < 60
