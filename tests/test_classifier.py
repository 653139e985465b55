"""extscan is the one judge of what is an ext volume, and every command
follows it: another filesystem made over an old ext4 (its backups still in
place) is left alone, an external journal is protected and replayed with its
filesystem, a disk and its copy are never told apart by UUID, and the disks
named for undo and scratch files are member-checked and never themselves
checked. Every image is compared from the host afterwards."""
import hashlib
import shutil
import subprocess

from disks import cat, fsck_clean, make_fs, sha256_file, tree
from harness import boot_with_disks, host, power_cut, run_to_poweroff


def over_old_ext(tmp_path, name, mkfs):
    img = str(tmp_path / f"{name}.img")
    make_fs(img, "320M", label=f"old{name}", options=["-b", "4096"])
    r = host(mkfs + [img])
    assert r.returncode == 0, r.stderr
    return img


def test_other_filesystems_over_old_ext_survive_a_repair(guest, tmp_path):
    foreign = {
        "xfs": over_old_ext(tmp_path, "xfs", ["mkfs.xfs", "-q", "-f"]),
        "btrfs": over_old_ext(tmp_path, "btrfs", ["mkfs.btrfs", "-q", "-f"]),
        "swap": over_old_ext(tmp_path, "swap", ["mkswap"]),
    }
    # A genuinely damaged ext4 (its primary superblock zeroed) is still
    # repaired from its backup.
    src = tmp_path / "tree"
    sums = tree(str(src), files=12)
    zeroed = str(tmp_path / "zeroed.img")
    make_fs(zeroed, "160M", label="xrzeroed", populate=str(src), options=["-b", "4096"])
    with open(zeroed, "r+b") as f:
        f.seek(1024)
        f.write(bytes(1024))
    disks = list(foreign.values()) + [zeroed]
    before = {d: sha256_file(d) for d in disks}
    log = run_to_poweroff(guest, "classifier-foreign", disks, "rescue.fsck=repair rescue.undo=none", mem=768)
    assert "rescue-fsck repair: summary" in log, log[-3000:]
    for i, name in enumerate(foreign):
        assert (f"/dev/vd{'abc'[i]}: skipped: another filesystem ({name}) over old ext traces "
                "(a backup superblock at block 32768): left alone") in log, (name, log[-3000:])
    changed = [n for n, d in foreign.items() if sha256_file(d) != before[d]]
    assert not changed, f"the repair wrote to {changed}"
    assert "-b 32768 -B 4096" in log and "/dev/vdd" in log, log[-3000:]
    fsck_clean(zeroed)
    lost = [p for p, s in sums.items() if hashlib.sha256(cat(zeroed, "/" + p)).hexdigest() != s]
    assert not lost, f"files not back after the repair from the backup: {lost}"


def test_external_journal_is_protected_and_replayed_in_ram(guest, tmp_path):
    fs = str(tmp_path / "fs.img")
    journal = str(tmp_path / "journal.img")
    for img, size in ((fs, "64M"), (journal, "16M")):
        subprocess.run(["truncate", "-s", size, img], check=True)
    # The volume and its journal are made where both are block devices, a
    # file written and committed, then the power cut with the journal dirty.
    power_cut(guest, "classifier-journal-crash", fs,
              "mke2fs -q -O journal_dev -b 4096 -L xrjournal /dev/vdb && "
              "mke2fs -q -t ext4 -b 4096 -L xrextj -J device=/dev/vdb /dev/vda && "
              "mkdir -p /mnt/x && mount -o journal_path=/dev/vdb /dev/vda /mnt/x && "
              "echo replayed > /mnt/x/after-commit && sync && echo 1 > /mnt/x/dirty",
              disks=[fs, journal])
    before = {d: sha256_file(d) for d in (fs, journal)}

    g = boot_with_disks(guest, "classifier-journal-look", [fs, journal])
    table = g.check("extscan")
    assert "external journal: /dev/vdb" in table and "the external journal of /dev/vda" in table, table
    out = g.check("rescue-mount /dev/vda")
    assert "journal replayed in RAM" in out, out
    assert g.check("cat /mnt/root/after-commit").strip() == "replayed"
    assert g.check("blockdev --getro /dev/vdb").strip() == "1", "the journal disk was not set read-only"
    g.check("rescue-mount --umount")
    out = g.check("rescue-fsck check /dev/vda", timeout=120)
    assert "journal replayed in RAM" in out and "/dev/vda         0      clean" in out, out
    assert g.poweroff() == 0
    assert {d: sha256_file(d) for d in (fs, journal)} == before, "a read-only look wrote to the volume or its journal"


def test_clones_and_named_disks(guest, tmp_path):
    """A disk and its copy: a name by UUID or label is refused with both
    names. The disk named for undo files must not belong to anything, and the
    scratch disk, mounted read-write, is not checked as if it were still."""
    original = str(tmp_path / "original.img")
    make_fs(original, "32M", label="xrclone")
    clone = str(tmp_path / "clone.img")
    shutil.copy(original, clone)
    scratch = str(tmp_path / "scratch.img")
    make_fs(scratch, "32M", label="xrscratch")
    # A whole-disk RAID1 leg (Intel IMSM) with the array's ext4 in partition 1.
    leg = str(tmp_path / "leg.img")
    subprocess.run(["truncate", "-s", "40M", leg], check=True)
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-L", "xrleg", "-E", "offset=1048576", leg, "30M"], check=True)
    with open(leg, "r+b") as f:
        f.seek(446)
        f.write(bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + (61440).to_bytes(4, "little"))
        f.seek(510)
        f.write(b"\x55\xaa")
        f.seek(40 * 2**20 - 1024)
        f.write(b"Intel Raid ISM Cfg Sig. 1.3.00")
    disks = [original, clone, scratch, leg]
    uuid = host(["blkid", "-s", "UUID", "-o", "value", original]).stdout.strip()
    before = {d: sha256_file(d) for d in disks}

    g = boot_with_disks(guest, "classifier-named", disks)
    assert "same UUID as /dev/vdb" in g.check("extscan -v /dev/vda /dev/vdb")
    for name in (f"UUID={uuid}", "LABEL=xrclone", f"/dev/disk/by-uuid/{uuid}"):
        status, out = g.run(f"rescue-fsck check {name}")
        assert status == 2 and f"{name} names more than one device: /dev/vda /dev/vdb" in out, out
        status, out = g.run(f"rescue-mount {name}")
        assert status != 0 and "/dev/vda /dev/vdb" in out, out
        assert g.run("mountpoint -q /mnt/root")[0] != 0, f"rescue-mount {name} mounted something"

    # The unattended run, as the command line would start it.
    def unattended(**params):
        g.check("rm -rf /run/extrescue/param && mkdir -p /run/extrescue/param")
        for key, value in params.items():
            g.check(f"printf %s '{value}' > /run/extrescue/param/{key}")
        return g.run("/lib/extrescue/boot/unattended 2>&1; cat /run/extrescue/said; : > /run/extrescue/said",
                     timeout=180)[1]

    out = unattended(fsck="repair", devices=f"UUID={uuid}", undo="none")
    assert f"UUID={uuid} names more than one device: /dev/vda /dev/vdb" in out, out
    assert "errors corrected" not in out and "== e2fsck" not in out, out
    out = unattended(fsck="repair", undo="/dev/vdd1")
    assert ("rescue.undo=/dev/vdd1 is partition 1 of vdd: Intel IMSM firmware RAID member (metadata 1.3.00)"
            in out and "not repairing" in out), out
    out = unattended(fsck="check", scratch="LABEL=xrscratch")
    assert "/dev/vdc: skipped: mounted read-write at /run/scratch-disk" in out, out
    assert "/dev/vda         0      clean" in out and "/dev/vdb         0      clean" in out, out
    assert g.poweroff() == 0
    after = {d: sha256_file(d) for d in disks}
    assert [d for d in (original, clone, leg) if after[d] != before[d]] == [], "a refused name changed a disk"
    fsck_clean(scratch)
