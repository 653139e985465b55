"""e2fsck's scratch files: a volume whose check would not fit in the guest's
free RAM (by rescue-fsck's estimate from its superblock and group
descriptors) is checked with e2fsck's tables in files on the disk named by
rescue.scratch=, and left as it was."""
import re
import subprocess

from disks import make_fs, sha256_file
from harness import boot_with_disks, host, run_to_poweroff

MEM = 160  # MiB of guest RAM: about 100 MiB free once the image is up


def many_inodes(tmp_path):
    """A sparse 64 GiB ext4 with 128M inodes, nearly empty: e2fsck's maps of
    it (a bit per inode in each, by the estimate) would not fit in MEM."""
    img = str(tmp_path / "many.img")
    host(["truncate", "-s", "64G", img])
    r = host(["mke2fs", "-q", "-F", "-t", "ext4", "-N", "128000000", "-L", "many", img])
    assert r.returncode == 0, r.stderr
    return img


def test_low_memory_check_without_scratch_warns(guest, tmp_path):
    img = many_inodes(tmp_path)
    g = boot_with_disks(guest, "scratch-none", [img], mem=MEM)
    out = g.run("rescue-fsck check /dev/vda", timeout=300)[1]
    assert re.search(r"/dev/vda: e2fsck may need about \d+ MiB and \d+ MiB are free; it may run out of memory "
                     r"\(name a disk for scratch files: --scratch-dir DIR, rescue.scratch=DEVICE\)", out), out
    assert re.search(r"/dev/vda +0 +clean", out), out


def test_low_memory_check_uses_scratch_disk(guest, tmp_path):
    img = many_inodes(tmp_path)
    scratch = str(tmp_path / "scratch.img")
    make_fs(scratch, "64M", label="xrscratch")
    log = run_to_poweroff(guest, "scratch-disk", [img, scratch],
                          "rescue.fsck=check rescue.devices=vda rescue.scratch=LABEL=xrscratch",
                          mem=MEM, timeout=600)
    assert re.search(r"/dev/vda: e2fsck may need about \d+ MiB and \d+ MiB are free: about \d+ MiB of its "
                     r"tables go to scratch files in /run/scratch-disk/extrescue-scratch", log), log[-2000:]
    assert re.search(r"/dev/vda +0 +clean", log), log[-2000:]
    # e2fsck removed its scratch files; the scratch disk was unmounted cleanly.
    listing = host(["debugfs", "-R", "ls -l /extrescue-scratch", scratch]).stdout
    names = [line.split()[-1] for line in listing.splitlines() if line.strip()]
    assert sorted(names) == [".", ".."], listing
    assert subprocess.run(["e2fsck", "-fn", scratch], capture_output=True).returncode == 0
    # The checked volume: clean, and its metadata as the host left it.
    r = host(["e2fsck", "-fn", img])
    assert r.returncode == 0, r.stdout


def test_check_that_fits_leaves_scratch_disk_alone(guest, tmp_path):
    """A check that fits in RAM never touches the scratch disk."""
    small = str(tmp_path / "small.img")
    make_fs(small, "32M", label="small")
    scratch = str(tmp_path / "scratch.img")
    make_fs(scratch, "32M", label="xrscratch")
    before = sha256_file(small)
    g = boot_with_disks(guest, "scratch-fits", [small, scratch], mem=MEM)
    g.check("mkdir -p /mnt/s && mount /dev/vdb /mnt/s")
    out = g.run("rescue-fsck check --scratch-dir /mnt/s /dev/vda", timeout=120)[1]
    assert "scratch files" not in out and re.search(r"/dev/vda +0 +clean", out), out
    g.check("test ! -e /mnt/s/extrescue-scratch && umount /mnt/s")
    assert sha256_file(small) == before
