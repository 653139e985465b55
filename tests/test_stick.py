"""The USB stick with a data partition (scripts/write-stick, rescue-stick on
the image): written onto raw images, its GPT and hybrid MBR verify, the ISO's
bytes are unchanged outside the partition tables, the EXTRESCUE partition
holds the owner's keys and parameters, and the stick boots by BIOS, UEFI and
Secure Boot. What it must refuse, it refuses and leaves alone."""
import glob
import os
import subprocess

import pytest

from harness import OUT, TOP, host
from test_secureboot import sb_args

WRITE_STICK = os.path.join(TOP, "scripts", "write-stick")
SFDISK = os.path.join(OUT, "build", "util-linux-root", "sbin", "sfdisk")
SECTOR = 512
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOm9x3tQ5cX0m0l2vO7lC8b0y4S8m1m8Zq3Y7cXqXU2b owner@laptop"
# What write-stick may change of the ISO: the MBR's partition table and the
# GPT's header and entries (sectors 1 to 33).
TABLES = [(446, 510), (SECTOR, 34 * SECTOR)]


def iso():
    found = glob.glob(os.path.join(OUT, "extrescue-*.iso"))
    assert len(found) == 1, "needs the built ISO (run make)"
    return found[0]


def blank(path, size):
    with open(path, "wb") as f:
        f.truncate(size)
    return str(path)


def write_stick(*args, stdin=subprocess.DEVNULL):
    return subprocess.run([WRITE_STICK, *map(str, args)], capture_output=True, text=True, stdin=stdin)


def data_offset(img):
    """Byte offset of the EXTRESCUE partition, from the stick's GPT."""
    out = host(["sgdisk", "-p", img]).stdout
    rows = [line.split() for line in out.splitlines() if line.strip().endswith("EXTRESCUE")]
    assert len(rows) == 1, out
    return int(rows[0][1]) * SECTOR


def fat_file(img, path):
    r = host(["mtype", "-i", f"{img}@@{data_offset(img)}", f"::{path}"], env=dict(os.environ, MTOOLS_SKIP_CHECK="1"))
    assert r.returncode == 0, r.stderr
    return r.stdout


def assert_iso_kept(img):
    """Every byte of the ISO but the partition tables is on the stick as written."""
    with open(iso(), "rb") as a, open(img, "rb") as b:
        want = a.read()
        got = b.read(len(want))
    for lo, hi in TABLES:
        want, got = want[:lo] + bytes(hi - lo) + want[hi:], got[:lo] + bytes(hi - lo) + got[hi:]
    assert want == got, "write-stick changed bytes of the ISO outside the partition tables"


def assert_tables_verify(img):
    r = host(["sgdisk", "-v", img])
    assert r.returncode == 0 and "No problems found" in r.stdout, r.stdout + r.stderr
    r = host([SFDISK, "-V", img])
    assert r.returncode == 0 and "No errors detected" in r.stdout, r.stdout + r.stderr


@pytest.fixture(scope="module")
def stick(tmp_path_factory):
    """A 256 MiB stick image made by write-stick with a key and parameters."""
    folder = tmp_path_factory.mktemp("stick")
    keys = folder / "keys.pub"
    keys.write_text(KEY + "\n")
    img = blank(folder / "stick.img", 256 << 20)
    r = write_stick(iso(), img, "--keys", keys, "--cmdline", "rescue.settle=3 ip=dhcp")
    assert r.returncode == 0, r.stderr
    assert "is an extrescue stick" in r.stdout, r.stdout
    return img


def test_written_stick_keeps_the_iso_and_verifies(stick):
    assert_tables_verify(stick)
    assert_iso_kept(stick)
    # The data partition: FAT32 labelled EXTRESCUE after the ISO, on a MiB boundary.
    offset = data_offset(stick)
    assert offset >= os.path.getsize(iso()) and offset % (1 << 20) == 0
    info = host(["minfo", "-i", f"{stick}@@{offset}", "::"], env=dict(os.environ, MTOOLS_SKIP_CHECK="1")).stdout
    assert "EXTRESCUE" in info and "FAT32" in info, info
    assert KEY in fat_file(stick, "/extrescue/authorized_keys")
    assert "rescue.settle=3 ip=dhcp" in fat_file(stick, "/extrescue/cmdline")
    assert "nothing on it is ever run" in fat_file(stick, "/extrescue/README.txt")
    listing = host(["mdir", "-b", "-i", f"{stick}@@{offset}", "::/extrescue"],
                   env=dict(os.environ, MTOOLS_SKIP_CHECK="1")).stdout
    for sub in ("undo", "reports", "logs"):
        assert f"::/extrescue/{sub}/" in listing, listing


BOOTS = {"bios": ["--firmware", "bios"], "uefi": ["--firmware", "uefi"], "secureboot": sb_args("usb")}


@pytest.mark.parametrize("way", list(BOOTS))
def test_stick_boots(guest, stick, way):
    args = [a for a in BOOTS[way] if a not in ("--medium", "usb")]
    g = guest(f"stick-{way}", args + ["--medium", "usb", "--iso", stick], boot_timeout=240)
    g.wait_shell()
    # The stick is the one USB disk: the ISO on the whole disk, the ESP and
    # EXTRESCUE (the only partition of that label) after it.
    assert 'TYPE="iso9660"' in g.check("blkid -p /dev/sda")
    seen = g.check("blkid").splitlines()
    assert [line.split(":")[0] for line in seen if 'LABEL="EXTRESCUE"' in line] == ["/dev/sda2"], seen
    assert any(line.startswith("/dev/sda2:") and 'TYPE="vfat"' in line for line in seen), seen
    assert any(line.startswith("/dev/sda1:") and 'PARTLABEL="extrescue ESP"' in line for line in seen), seen
    if way != "bios":
        assert g.check("[ -d /sys/firmware/efi ] && echo efi").strip() == "efi"
    if way == "secureboot":
        assert "[integrity]" in g.check("cat /sys/kernel/security/lockdown")
    assert g.poweroff() == 0
    g.assert_no_fatal()


def test_add_data_to_a_stick_written_with_dd(tmp_path):
    img = blank(tmp_path / "dd.img", 128 << 20)
    subprocess.run(["dd", f"if={iso()}", f"of={img}", "conv=notrunc", "status=none"], check=True)
    # It rewrites the partition tables: asked first, refused without a terminal.
    r = write_stick("--add-data", img)
    assert r.returncode != 0 and "--yes" in r.stderr, r.stderr
    r = write_stick("--add-data", img, "--yes")
    assert r.returncode == 0, r.stderr
    assert_tables_verify(img)
    assert_iso_kept(img)
    assert "Public SSH keys" in fat_file(img, "/extrescue/authorized_keys")


def test_refusals_leave_the_target_alone(tmp_path):
    # Too small for the ISO and 64 MiB.
    small = blank(tmp_path / "small.img", 80 << 20)
    r = write_stick(iso(), small, "--yes")
    assert r.returncode != 0 and "needs at least" in r.stderr, r.stderr
    # Something on it, no terminal, no --yes: nothing written.
    used = blank(tmp_path / "used.img", 256 << 20)
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", used], check=True)
    before = open(used, "rb").read(1 << 20)
    r = write_stick(iso(), used)
    assert r.returncode != 0 and "ext4" in r.stderr and "--yes" in r.stderr, r.stderr
    assert open(used, "rb").read(1 << 20) == before
    # An image attached to a loop device, and that device while mounted.
    loop = host(["losetup", "-f", "--show", used]).stdout.strip()
    assert loop.startswith("/dev/loop"), loop
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    try:
        r = write_stick(iso(), used, "--yes")
        assert r.returncode != 0 and "loop device" in r.stderr, r.stderr
        subprocess.run(["mount", "-o", "ro", loop, str(mnt)], check=True)
        try:
            r = write_stick(iso(), loop, "--yes")
            assert r.returncode != 0 and "is mounted" in r.stderr, r.stderr
        finally:
            subprocess.run(["umount", str(mnt)], check=True)
    finally:
        subprocess.run(["losetup", "-d", loop], check=True)
    assert open(used, "rb").read(1 << 20) == before
    # Not an extrescue ISO; a key file that is not text; --add-data on a disk without the ISO.
    r = write_stick(used, blank(tmp_path / "t.img", 256 << 20), "--yes")
    assert r.returncode != 0 and "not an extrescue ISO" in r.stderr, r.stderr
    binary = tmp_path / "keys.bin"
    binary.write_bytes(bytes(range(256)))
    r = write_stick(iso(), tmp_path / "t.img", "--keys", binary, "--yes")
    assert r.returncode != 0 and "not a text file" in r.stderr, r.stderr
    r = write_stick("--add-data", tmp_path / "t.img", "--yes")
    assert r.returncode != 0 and "does not start with an extrescue ISO" in r.stderr, r.stderr
    assert not any(open(tmp_path / "t.img", "rb").read(1 << 20))


def test_rescue_stick_on_the_running_system(guest, tmp_path):
    """Booted from CD, the image makes a stick of a blank disk from its own
    medium; it refuses a partition. The stick it made verifies on the host
    and boots."""
    target = blank(tmp_path / "made.img", 128 << 20)
    parted = blank(tmp_path / "parted.img", 128 << 20)
    host(["sgdisk", "-n", "1:2048:0", parted])
    g = guest("stick-made-in-guest", ["--medium", "cd", "--disk", f"{target},if=virtio-blk,rw",
                                      "--disk", f"{parted},if=virtio-blk,rw"])
    g.wait_shell()
    status, out = g.run("rescue-stick /dev/sr0 /dev/vdb1 --yes")
    assert status != 0 and "is a partition" in out, out
    out = g.check("rescue-stick /dev/sr0 /dev/vda --cmdline rescue.settle=2 2>&1", timeout=120)
    assert "is an extrescue stick" in out, out
    assert g.poweroff() == 0
    g.assert_no_fatal()
    assert_tables_verify(target)
    assert_iso_kept(target)
    assert "rescue.settle=2" in fat_file(target, "/extrescue/cmdline")
    g = guest("stick-made-in-guest-boots", ["--firmware", "bios", "--medium", "usb", "--iso", target])
    g.wait_shell()
    assert "LABEL=\"EXTRESCUE\"" in g.check("blkid /dev/sda2")
    assert g.poweroff() == 0
