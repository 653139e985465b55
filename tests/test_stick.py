"""The USB stick with a data partition (scripts/write-stick, rescue-stick on
the image): written onto raw images, its GPT and hybrid MBR verify, the ISO's
bytes are unchanged outside the partition tables, the EXTRESCUE partition
holds the owner's keys and parameters, and the stick boots by BIOS, UEFI and
Secure Boot. What it must refuse, it refuses and leaves alone."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from disks import damaged, fsck_clean, make_fs, sha256_file
from harness import OUT, TOP, host
from test_network import free_port, keypair, network_ready, ssh
from test_secureboot import sb_args

WRITE_STICK = os.path.join(TOP, "scripts", "write-stick")
SFDISK = os.path.join(OUT, "build", "util-linux-root", "sbin", "sfdisk")
SECTOR = 512
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOm9x3tQ5cX0m0l2vO7lC8b0y4S8m1m8Zq3Y7cXqXU2b owner@laptop"
# What write-stick may change of the ISO: the MBR's disk signature (a
# random one) and partition table, and the GPT's header and entries
# (sectors 1 to 33).
TABLES = [(440, 444), (446, 510), (SECTOR, 34 * SECTOR)]


def iso(out=OUT):
    found = glob.glob(os.path.join(out, "extrescue-*.iso"))
    assert len(found) == 1, f"needs the built ISO in {out} (run make)"
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


def mtools(*args):
    r = host(list(args), env=dict(os.environ, MTOOLS_SKIP_CHECK="1"))
    assert r.returncode == 0, r.stderr
    return r.stdout


def fat_file(img, path):
    return mtools("mtype", "-i", f"{img}@@{data_offset(img)}", f"::{path}")


def assert_iso_kept(img, image=None):
    """Every byte of the ISO but the partition tables is on the stick as written."""
    with open(image or iso(), "rb") as a, open(img, "rb") as b:
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
    info = mtools("minfo", "-i", f"{stick}@@{offset}", "::")
    assert "EXTRESCUE" in info and "FAT32" in info, info
    assert KEY in fat_file(stick, "/extrescue/authorized_keys")
    assert "rescue.settle=3 ip=dhcp" in fat_file(stick, "/extrescue/cmdline")
    assert "nothing on it is ever run" in fat_file(stick, "/extrescue/README.txt")
    listing = mtools("mdir", "-b", "-i", f"{stick}@@{offset}", "::/extrescue")
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
    # The boot found its own stick: on USB under BIOS, by the boot loader's
    # partition (LoaderDevicePartUUID) under UEFI.
    summary = g.check("cat /run/extrescue/stick/summary")
    assert "Stick: /dev/sda2 (EXTRESCUE on the disk this system booted from)" in summary, summary
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


# Reading the stick at boot: keys and parameters taken as data, only from the
# stick this system booted from or the one rescue.stick= names.

def owner_stick(folder, name, cmdline="rescue.undo=none init=/bin/sh", image=None):
    """A stick of IMAGE (default: OUT's ISO) with the owner's key and
    CMDLINE; returns (stick, private key)."""
    key, pub = keypair(str(folder), f"{name}-owner")
    keys = folder / f"{name}.pub"
    keys.write_text(pub + "\n")
    img = blank(folder / f"{name}.img", 256 << 20)
    r = write_stick(image or iso(), img, "--keys", keys, "--cmdline", cmdline)
    assert r.returncode == 0, r.stderr
    return img, key


def planted_disk(folder, key_pub):
    """A server disk with a FAT partition labelled EXTRESCUE holding an
    intruder's key and a cmdline that would power the rescue off."""
    img = blank(folder / "server.img", 96 << 20)
    host(["sgdisk", "-n", "1:2048:0", "-t", "1:0700", img])
    offset = 2048 * SECTOR
    r = host(["mkfs.vfat", "-F", "32", "-n", "EXTRESCUE", "--offset", "2048", img, str((96 << 10) - 1024 - 64)])
    assert r.returncode == 0, r.stderr
    src = folder / "planted"
    (src / "extrescue").mkdir(parents=True)
    (src / "extrescue" / "authorized_keys").write_text(key_pub + "\n")
    (src / "extrescue" / "cmdline").write_text("rescue.after=poweroff\n")
    mtools("mcopy", "-s", "-i", f"{img}@@{offset}", str(src / "extrescue"), "::/")
    return img


def test_keys_and_parameters_from_the_stick_reach_ssh(guest, tmp_path):
    """Booted from the stick with a NIC and nothing on the command line: the
    host logs in with the stick's key at the stick's static address; the
    stick's parameters are taken, init= is refused; a server disk's EXTRESCUE partition and an ext4 labelled
    EXTRESCUE are named, never read, and the intruder's key does not work."""
    img, key = owner_stick(tmp_path, "own", cmdline="rescue.undo=none init=/bin/sh "
                                                    "ip=10.0.2.15::10.0.2.2:255.255.255.0::eth0:none")
    intruder, intruder_pub = keypair(str(tmp_path), "intruder")
    planted = planted_disk(tmp_path, intruder_pub)
    ext4 = blank(tmp_path / "ext4.img", 32 << 20)
    host(["mke2fs", "-q", "-F", "-t", "ext4", "-L", "EXTRESCUE", ext4])
    before = sha256_file(planted), sha256_file(ext4)
    port = free_port()
    g = guest("stick-keys", ["--firmware", "bios", "--medium", "usb", "--iso", img,
                             "--nic", f"virtio-net-pci,fwd={port}:22",
                             "--disk", f"{planted},if=virtio-blk,rw", "--disk", f"{ext4},if=virtio-blk,rw"],
              boot_timeout=180)
    g.wait_shell()
    network_ready(g)
    assert "rescue.ssh_key" not in g.check("cat /proc/cmdline")
    # rescue.undo=none from the stick's cmdline; rescue.after=poweroff from the planted one is not.
    r = ssh(key, port, "echo $(cat /run/extrescue/param/undo); [ -e /run/extrescue/param/after ] || echo no-after",
            str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["none", "no-after"], r.stdout
    r = ssh(intruder, port, "true", str(tmp_path))
    assert r.returncode != 0, "the key planted on a server disk logged in"
    banner = g.check("/lib/extrescue/boot/banner")
    # QEMU's boot medium is read-only: the stick is used, and nothing is written to it.
    assert "Stick: /dev/sda2 (EXTRESCUE on the disk this system booted from), write-protected" in banner, banner
    # The stick's own static address, not DHCP for its keys.
    assert "rescue.ssh_key: 1 key(s) from the stick" in banner and "ip=dhcp" not in banner, banner
    assert "from the stick's cmdline: ip rescue.undo" in banner, banner
    assert g.check("cat /run/extrescue/net/ip").startswith("static")
    assert "ignored: /dev/vda1 (EXTRESCUE, not on the disk this system booted from" in banner, banner
    assert "ignored: /dev/vdb (labelled EXTRESCUE, but ext4" in banner, banner
    assert "the stick's cmdline may not set init; left out" in g.serial_log()
    assert g.check("cat /sys/block/sda/sda2/ro").strip() == "1"
    assert "/dev/sda2" not in g.check("cat /proc/mounts")
    assert g.poweroff() == 0
    g.assert_no_fatal()
    assert (sha256_file(planted), sha256_file(ext4)) == before


def test_after_a_cd_boot_a_stick_is_read_only_when_named(guest, tmp_path):
    """Booted from CD, a stick beside it is not read; named by
    rescue.stick=LABEL=EXTRESCUE (a direct boot with the CD in the drive,
    as the boot menu's edited entry would be) it is; rescue.stick=off reads
    none."""
    img, _ = owner_stick(tmp_path, "beside", cmdline="rescue.settle=3")
    stick = ["--disk", f"{img},if=usb-xhci,rw"]
    g = guest("stick-cd", ["--medium", "cd"] + stick)
    g.wait_shell()
    summary = g.check("cat /run/extrescue/stick/summary")
    assert "Stick: none read: booted from CD" in summary and "ignored: /dev/sda2" in summary, summary
    assert g.run("cat /run/extrescue/param/ssh_key")[0] != 0
    assert g.poweroff() == 0
    cd = ["--", "-drive", f"file={iso()},media=cdrom,readonly=on,if=ide"]
    for value, want in (("LABEL=EXTRESCUE", "Stick: /dev/sda2 (named by rescue.stick=): undo files"),
                        ("off", "Stick: not read (rescue.stick=off)")):
        g = guest(f"stick-named-{value[:3]}", ["--direct", "--append", f"console=ttyS0,115200n8 rescue.stick={value}"]
                  + stick + cd)
        g.wait_shell()
        summary = g.check("cat /run/extrescue/stick/summary")
        assert want in summary, summary
        keys = g.run("cat /run/extrescue/param/ssh_key")
        assert (keys[0] == 0) == (value != "off"), keys
        assert g.poweroff() == 0
        g.assert_no_fatal()


def test_hostile_stick_contents_are_data(guest, tmp_path):
    """A 100 MiB cmdline, a binary authorized_keys, shell code in values and a
    directory where a file should be: one line each, nothing runs, the boot
    goes on to its shell."""
    img, _ = owner_stick(tmp_path, "bad")
    offset = data_offset(img)
    big = tmp_path / "cmdline"
    with open(big, "wb") as f:
        f.truncate(100 << 20)
    binary = tmp_path / "authorized_keys"
    binary.write_bytes(bytes(range(256)) * 16)
    mtools("mcopy", "-o", "-i", f"{img}@@{offset}", str(big), str(binary), "::/extrescue/")

    def boot(name):
        """A boot with the stick named; returns the guest and its errors."""
        g = guest(name, ["--direct", "--append", "console=ttyS0,115200n8 rescue.stick=/dev/vda2",
                         "--disk", f"{img},if=virtio-blk"])
        g.wait_shell()
        return g, g.check("cat /run/extrescue/errors")
    g, errors = boot("stick-bad-1")
    assert "the stick's cmdline is larger than 8192 bytes; none of it is taken" in errors, errors
    assert "the stick's authorized_keys is not text" in errors, errors
    assert g.run("cat /run/extrescue/param/ssh_key")[0] != 0
    assert g.poweroff() == 0
    g.assert_no_fatal()

    mtools("mdel", "-i", f"{img}@@{offset}", "::/extrescue/authorized_keys")
    mtools("mmd", "-i", f"{img}@@{offset}", "::/extrescue/authorized_keys")
    shell = tmp_path / "shellcode"
    shell.write_text('# edited on Windows\r\nrescue.after=$(reboot) "rescue.devices=`reboot`"\r\n'
                     'rescue.undo=none init=/bin/sh rescue.fsck=repair;reboot\r\n')
    mtools("mcopy", "-o", "-i", f"{img}@@{offset}", str(shell), "::/extrescue/cmdline")
    g, errors = boot("stick-bad-2")
    assert "the stick's extrescue/authorized_keys is not a file" in errors, errors
    assert "rescue.after=$(reboot) is not one of the accepted values" in errors, errors
    assert "the stick's cmdline may not set init" in errors, errors
    assert "rescue.fsck=repair;reboot is not one of the accepted values" in errors, errors
    assert g.check("for f in devices undo; do cat /run/extrescue/param/$f; echo; done").split() == ["`reboot`", "none"]
    assert g.run("cat /run/extrescue/param/after")[0] != 0
    assert g.poweroff() == 0
    g.assert_no_fatal()


# Remembering: the stick this system booted from keeps undo files, the
# report and the log; rescue.stick=ro and a full stick change nothing.

def stick_files(img, folder):
    """{name: bytes} of the files in the stick's extrescue/FOLDER."""
    offset = data_offset(img)
    names = mtools("mdir", "-b", "-i", f"{img}@@{offset}", f"::/extrescue/{folder}").split()
    out = {}
    for n in names:
        if n.endswith("/"):
            continue
        r = subprocess.run(["mtype", "-i", f"{img}@@{offset}", n], capture_output=True,
                           env=dict(os.environ, MTOOLS_SKIP_CHECK="1"))
        out[n.rsplit("/", 1)[1]] = r.stdout
    return out


def test_unattended_repair_with_the_stick_alone_keeps_its_way_back(guest, tmp_path):
    """The stick's cmdline asks for the repair and the power-off; the undo file,
    report and log land on the stick, whose FAT is left clean; the server's
    other disk is untouched. Booted again (the kernel's line overriding the
    stick's repair), rescue-stick lists what the stick holds and finds the
    volume the undo file belongs to by its UUID, under its new name; e2undo
    with that file gives back the damaged volume byte for byte."""
    bad = damaged(tmp_path, "xrdamaged")
    original = tmp_path / "xrdamaged.orig"
    shutil.copy(bad, original)
    other = str(tmp_path / "other.img")
    make_fs(other, "32M", label="xrother")
    other_before = sha256_file(other)
    img, _ = owner_stick(tmp_path, "rec", cmdline="rescue.fsck=repair rescue.devices=LABEL=xrdamaged "
                                                  "rescue.after=poweroff")
    g = guest("stick-remember", ["--own-disk", "--disk", f"{img},if=usb-xhci,rw",
                                 "--disk", f"{bad},if=virtio-blk,rw", "--disk", f"{other},if=virtio-blk,rw"],
              boot_timeout=240)
    g.expect([r"reboot: Power down"], 300, "the power-off after the repair")
    log = g.serial_log()
    assert "errors corrected" in log and "saved on the stick" in log, log[-3000:]
    assert sha256_file(other) == other_before, "a disk nobody named was written"
    fsck_clean(bad)
    assert_fat_clean(img)
    undo = stick_files(img, "undo")
    assert len(undo) == 1 and next(iter(undo)).startswith("vda-"), undo
    undo_name = next(iter(undo))
    reports, logs = stick_files(img, "reports"), stick_files(img, "logs")
    assert len(reports) == 1 and len(logs) == 1, (reports, logs)
    name = next(iter(reports))
    assert re.fullmatch(r"\d{8}-\d{6}-[A-Za-z0-9.-]+\.json", name), name
    report = json.loads(next(iter(reports.values())))
    fsck = [v for v in report["fsck"] if v["device"] == "/dev/vda"]
    assert len(fsck) == 1 and fsck[0]["undo_file"].endswith(undo_name), report["fsck"]
    text = next(iter(logs.values())).decode(errors="replace")
    assert "/dev/vda" in text and "errors corrected" in text, text[-2000:]

    # Booted by QEMU's -kernel, with the server's disks the BIOS counts
    # first: the stick is not the boot disk, so it is named.
    g = guest("stick-remember-look", ["--direct", "--append", "console=ttyS0,115200n8 rescue.fsck=report "
                                      "rescue.after=shell rescue.stick=LABEL=EXTRESCUE",
                                      "--disk", f"{img},if=usb-xhci,rw",
                                      "--disk", f"{other},if=virtio-blk,rw", "--disk", f"{bad},if=virtio-blk,rw"])
    g.wait_shell()
    status = g.check("rescue-stick status")
    assert "extrescue/undo/: 1 file(s)" in status and "Space: " in status, status
    listing = g.check("rescue-stick list")
    assert re.search(rf"\d{{8}} \d{{6}} vda\s+undo\s+extrescue/undo/{re.escape(undo_name)}", listing), listing
    assert re.search(r"report\s+extrescue/reports/" + re.escape(name), listing), listing
    out = g.check(f"rescue-stick undo {undo_name}")
    assert re.search(rf"^e2undo '/run/extrescue/stick/\S+/{re.escape(undo_name)}' /dev/vdb$", out, re.M), out
    # A repair by hand keeps its undo file on the stick too, and gives the
    # stick back (unmounted, clean) when it is done.
    out = g.check("rescue-fsck repair LABEL=xrother 2>&1", timeout=120)
    assert "e2undo /run/extrescue/stick/rw/extrescue/undo/vda-" in out, out
    assert "/dev/sda2" not in g.check("cat /proc/mounts")
    assert g.check("cat /sys/block/sda/sda2/ro").strip() == "1"
    assert g.poweroff() == 0
    g.assert_no_fatal()
    assert_fat_clean(img)
    assert len(stick_files(img, "undo")) == 2

    saved = tmp_path / "saved.e2undo"
    saved.write_bytes(undo[undo_name])
    r = host(["e2undo", str(saved), bad])
    assert r.returncode == 0, r.stdout + r.stderr
    assert sha256_file(bad) == sha256_file(original), "e2undo with the stick's undo file did not restore the original"


def assert_fat_clean(img):
    """The data partition's FAT was unmounted cleanly (Linux sets bit 0 of
    byte 0x41 of a FAT32 boot sector while it is mounted read-write)."""
    with open(img, "rb") as f:
        f.seek(data_offset(img) + 0x41)
        assert f.read(1)[0] & 1 == 0, "the stick's FAT was left dirty"


def test_read_only_stick_and_full_stick_change_nothing(guest, tmp_path):
    """rescue.stick=ro: a check and a clean power-off leave every byte of the
    stick as it was. A stick with no room for the undo file: the repair is
    refused before anything is written, the volume is unchanged."""
    img, _ = owner_stick(tmp_path, "ro", cmdline="rescue.fsck=check")
    before = sha256_file(img)
    g = guest("stick-ro", ["--direct", "--append", "console=ttyS0,115200n8 rescue.stick=ro",
                           "--disk", f"{img},if=usb-xhci,rw"])
    g.wait_shell()
    assert "read-only (rescue.stick=ro): nothing is written to it" in g.check("cat /run/extrescue/stick/summary")
    assert g.poweroff("poweroff") == 0
    assert sha256_file(img) == before, "rescue.stick=ro wrote to the stick"

    bad = damaged(tmp_path, "xrfull")
    bad_before = sha256_file(bad)
    small = blank(tmp_path / "small.img", 96 << 20)
    r = write_stick(iso(), small, "--cmdline", "rescue.fsck=repair rescue.devices=LABEL=xrfull rescue.after=poweroff")
    assert r.returncode == 0, r.stderr
    offset = data_offset(small)
    free = int(re.search(r"(\d[\d ]*) bytes free", mtools("mdir", "-i", f"{small}@@{offset}", "::/")).group(1)
               .replace(" ", ""))
    filler = tmp_path / "filler"
    with open(filler, "wb") as f:
        f.truncate(free - 512)              # one cluster left: no undo file, no report fits
    mtools("mcopy", "-i", f"{small}@@{offset}", str(filler), "::/filler")
    g = guest("stick-full", ["--own-disk", "--disk", f"{small},if=usb-xhci,rw", "--disk", f"{bad},if=virtio-blk,rw"],
              boot_timeout=240)
    g.expect([r"reboot: Power down"], 300, "the power-off after the refused repair")
    log = g.serial_log()
    assert "no room on the stick for an undo file" in log, log[-3000:]
    # The record stops with one line, said once although the save ran twice.
    assert log.count("the stick is full (or failing)") == 1, log[-3000:]
    assert sha256_file(bad) == bad_before, "a repair without room for its undo file wrote to the volume"
    assert_fat_clean(small)
    assert stick_files(small, "reports") == {} and stick_files(small, "undo") == {}


def test_a_stick_whose_fat_needs_repair_is_only_read(guest, tmp_path):
    """The FAT's dirty bit set (a stick pulled while it was written): its keys
    and parameters are still read, nothing is written to it, one line says
    why; an undo file then needs another place."""
    img, _ = owner_stick(tmp_path, "dirty", cmdline="rescue.fsck=repair rescue.after=poweroff")
    with open(img, "r+b") as f:
        f.seek(data_offset(img) + 0x41)
        state = f.read(1)[0]
        f.seek(data_offset(img) + 0x41)
        f.write(bytes([state | 1]))
    before = sha256_file(img)
    g = guest("stick-dirty", ["--own-disk", "--disk", f"{img},if=usb-xhci,rw"], boot_timeout=240)
    g.expect([r"reboot: Power down"], 300, "the power-off")
    log = g.serial_log()
    assert "the stick's FAT (/dev/sda2) needs a repair (fsck.fat -n: Dirty bit is set" in log, log[-3000:]
    assert "would lose the undo files (in RAM); nothing repaired" in log, log[-3000:]
    assert sha256_file(img) == before, "a stick whose FAT needs a repair was written"


def planted_loader_variable(folder, partuuid):
    """An OVMF variable store holding LoaderDevicePartUUID = PARTUUID as a
    non-volatile variable, as root on a broken-into server can make it
    through efivarfs (made with virt-fw-vars)."""
    value = (partuuid.upper() + "\0").encode("utf-16-le").hex()
    spec = folder / "planted.json"
    spec.write_text(json.dumps({"version": 2, "variables": [{
        "name": "LoaderDevicePartUUID", "guid": "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f",
        "attr": 7, "data": value}]}))
    store = str(folder / "planted-vars.fd")
    virt_firmware = os.path.join(OUT, "build/virt-firmware/usr/lib/python3/dist-packages")
    host([sys.executable, "-m", "virt.firmware.vars", "-i", "/usr/share/OVMF/OVMF_VARS_4M.fd", "-o", store,
          "--set-json", str(spec)], check=True, env=dict(os.environ, PYTHONPATH=virt_firmware))
    return store


def partition_guid(img, n):
    out = host(["sgdisk", "-i", str(n), img]).stdout
    return re.search(r"Partition unique GUID: ([0-9A-F-]{36})", out).group(1).lower()


def test_a_server_disk_carrying_the_image_is_not_the_stick(guest, tmp_path):
    """The image's identity is public: a server disk written with the ISO
    and an EXTRESCUE partition (by an intruder, or by an old dd) is read
    only when named. Under BIOS, not on USB, or on USB (a server's internal
    USB module) but not the firmware's boot disk 0x80 by the stick's random
    MBR signature; under UEFI without a boot loader naming its partition (a
    direct or network boot), or named by a LoaderDevicePartUUID that is
    non-volatile (planted from the running server): not read, said why."""
    img, _ = owner_stick(tmp_path, "forged")
    before = sha256_file(img)
    # The server's own disk, which the BIOS counts first, with a signature of its own.
    system = blank(tmp_path / "system.img", 64 << 20)
    with open(system, "r+b") as f:
        f.seek(440)
        f.write(bytes.fromhex("5eed5eed"))
        f.seek(510)
        f.write(b"\x55\xaa")
    planted = planted_loader_variable(tmp_path, partition_guid(img, 1))
    cases = (("bios", [], "virtio-blk", "carries this image but is not on USB"),
             ("bios", ["--disk", f"{system},if=virtio-blk"], "usb-xhci",
              "carries this image but is not the BIOS's boot disk 0x80 (MBR signature"),
             ("uefi", [], "usb-xhci", "the UEFI boot loader named no boot partition"),
             ("uefi", ["--efivars", planted], "usb-xhci",
              "the UEFI variable LoaderDevicePartUUID is non-volatile"))
    for n, (firmware, extra, disk, why) in enumerate(cases):
        g = guest(f"stick-forged-{n}-{firmware}", ["--direct", "--firmware", firmware] + extra +
                  ["--disk", f"{img},if={disk},rw"], boot_timeout=180)
        g.wait_shell()
        summary = g.check("cat /run/extrescue/stick/summary")
        assert "Stick: none read" in summary and why in summary, summary
        assert g.run("cat /run/extrescue/param/ssh_key")[0] != 0
        assert g.poweroff("poweroff") == 0
        g.assert_no_fatal()
    assert sha256_file(img) == before, "a disk that was not the stick was written"
