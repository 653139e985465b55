"""e2fsck's scratch files: a volume whose check does not fit in the guest's
free RAM (rescue-fsck's estimate from its superblock and group descriptors)
is checked with e2fsck's link-count and directory tables in files on the
disk the user named, and left as it was. Without such a disk the same check
runs out of memory, and rescue-fsck says so."""
import re

from disks import fsck_clean, make_fs, sha256_file
from harness import IMAGE_INITRD, boot_with_disks, host, run_to_poweroff

# e2fsck's time under TCG grows with the inode count (pass 4 visits every
# inode number: 28 s of a 45 s check of 260M), so the guests are as small
# as the checks allow and the volumes only just too big for them.
MEM = 128  # MiB of guest RAM: about 65 MiB free once the image is up
PINNED = 12  # MiB left free by pin_free_memory
# The image's own (compressed) initramfs needs less RAM while it unpacks than
# the suite's uncompressed one: 92 MiB boot with about 34 MiB free. The
# kernel unpacks it while drivers start, so the peak moves with the timing:
# 76 MiB never booted here, 80 MiB did but once failed to unpack under load.
BOOT_MEM = 92


def empty_volume(tmp_path, name, size, inodes):
    """A sparse, nearly empty ext4 with INODES inodes. e2fsck makes its two
    link-count tables up front, 8 bytes for one inode in 50 each: 41 MB for
    128M inodes, 128 MB for 400M, whatever the volume holds."""
    img = str(tmp_path / f"{name}.img")
    make_fs(img, size, label=name, options=["-N", str(inodes)])
    return img


def free_mib(g):
    return int(g.check("awk '/^MemAvailable:/ {print $2}' /proc/meminfo").split()[-1]) // 1024


def pin_free_memory(g, mib):
    """Takes RAM from the guest until about MIB MiB are free: a file in a
    tmpfs of its own, which without swap the kernel can neither reclaim nor
    move out of the way."""
    avail = free_mib(g)
    assert avail - mib > 16, f"only {avail} MiB free after boot"
    g.check(f"mkdir -p /run/ballast && mount -t tmpfs -o size={avail}m ballast /run/ballast")
    # Filling the tmpfs makes the kernel give back some memory it held (10 MiB
    # of 66 once): topped up until the figure holds.
    left = avail
    for n in range(4):
        if left - mib <= 4:
            break
        g.check(f"dd if=/dev/zero of=/run/ballast/fill{n} bs=1M count={left - mib} 2>/dev/null")
        left = free_mib(g)
    # Never more than a little over: the checks rely on the volume not fitting.
    assert mib - 4 <= left <= mib + 4, f"{left} MiB free after pinning, wanted {mib}"


def assert_scratch_disk_clean(scratch):
    """e2fsck removed its scratch files; the scratch disk was unmounted cleanly."""
    listing = host(["debugfs", "-R", "ls -l /extrescue-scratch", scratch]).stdout
    names = [line.split()[-1] for line in listing.splitlines() if line.strip()]
    assert sorted(names) == [".", ".."], listing
    fsck_clean(scratch)


def test_check_out_of_memory_without_scratch_passes_with_it(guest, tmp_path):
    """In the same guest, with the same RAM free: the check is killed for
    want of memory without scratch files, and passes with them."""
    img = empty_volume(tmp_path, "many", "32G", 64_000_000)
    scratch = str(tmp_path / "scratch.img")
    make_fs(scratch, "64M", label="xrscratch")
    g = boot_with_disks(guest, "scratch-pinned", [img, scratch], mem=MEM)
    pin_free_memory(g, PINNED)

    status, out = g.run("rescue-fsck check /dev/vda", timeout=600)
    assert re.search(r"/dev/vda: e2fsck may need about \d+ MiB and \d+ MiB are free; it may run out of memory "
                     r"\(name a disk for scratch files: --scratch-dir DIR, rescue.scratch=DEVICE\)", out), out
    assert "rescue-fsck: /dev/vda: e2fsck was killed (out of memory)" in out, out
    assert re.search(r"/dev/vda +8 +operational error \(e2fsck killed: out of memory; name a disk for scratch "
                     r"files", out), out
    assert status == 8, out

    g.check("mkdir -p /mnt/s && mount /dev/vdb /mnt/s")
    status, out = g.run("rescue-fsck check --scratch-dir /mnt/s /dev/vda", timeout=600)
    assert re.search(r"/dev/vda: e2fsck may need about \d+ MiB and \d+ MiB are free: about \d+ MiB of its "
                     r"tables go to scratch files in /mnt/s/extrescue-scratch", out), out
    assert "killed" not in out and re.search(r"/dev/vda +0 +clean", out), out
    assert status == 0, out
    g.check("umount /mnt/s")
    assert_scratch_disk_clean(scratch)
    fsck_clean(img)


def test_unattended_check_uses_scratch_disk(guest, tmp_path):
    """rescue.scratch= at boot: 130M inodes need about 44 MiB where about 34
    are free, so the tables go to the named disk."""
    img = empty_volume(tmp_path, "big", "80G", 130_000_000)
    scratch = str(tmp_path / "scratch.img")
    make_fs(scratch, "64M", label="xrscratch")
    log = run_to_poweroff(guest, "scratch-disk", [img, scratch],
                          "rescue.fsck=check rescue.devices=vda rescue.scratch=LABEL=xrscratch",
                          mem=BOOT_MEM, timeout=900, initrd=IMAGE_INITRD)
    plan = re.search(r"/dev/vda: e2fsck may need about \d+ MiB and \d+ MiB are free: about \d+ MiB of its "
                     r"tables go to scratch files in /run/scratch-disk/extrescue-scratch", log)
    assert plan, log[-2000:]
    print(plan.group(0))
    assert "killed" not in log and re.search(r"/dev/vda +0 +clean", log), log[-2000:]
    assert_scratch_disk_clean(scratch)
    fsck_clean(img)


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
