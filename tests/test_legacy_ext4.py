"""Volumes and fstab habits of the extents/mballoc era mount with our kernel patches."""
import subprocess

from disks import cat, fsck_clean, make_fs, tree
from harness import host


def test_ext4dev_and_legacy_options(guest, tmp_path):
    img = str(tmp_path / "ext4.img")
    make_fs(img, "64M")
    g = guest("legacy-options", ["--direct", "--disk", f"{img},if=virtio-blk,rw"])
    g.wait_shell()
    g.check("mount -t ext4dev /dev/vda /mnt")
    assert "/dev/vda /mnt ext4dev rw" in g.check("cat /proc/mounts")
    g.check("echo ext4dev > /mnt/via-ext4dev && umount /mnt")
    g.check("mount -t ext4 -o extents,mballoc,delalloc /dev/vda /mnt")
    g.check("echo options > /mnt/via-options && umount /mnt")
    g.check("mount -t ext4 -o noextents,nomballoc /dev/vda /mnt && umount /mnt")
    log = g.check("dmesg")
    for opt in ("extents", "mballoc", "noextents", "nomballoc"):
        assert f"Ignoring removed {opt} option" in log, f"no warning for {opt}: {log[-2000:]}"
    # An option nobody ever had is still refused.
    assert g.run("mount -t ext4 -o no_such_option /dev/vda /mnt")[0] != 0
    assert g.poweroff() == 0
    g.assert_no_fatal()
    fsck_clean(img)
    assert cat(img, "/via-ext4dev") == b"ext4dev\n" and cat(img, "/via-options") == b"options\n"


def test_ext3_with_extents_mounts_rw(guest, tmp_path):
    src = tmp_path / "tree"
    src.mkdir()
    tree(str(src), files=12)
    img = str(tmp_path / "ext3x.img")
    # The on-disk format of the original patch series: ext3 plus extents.
    make_fs(img, "64M", fstype="ext3", options=["-O", "extents"], populate=str(src))
    feats = host(["dumpe2fs", "-h", img]).stdout
    assert "extent" in feats and "has_journal" in feats and "flex_bg" not in feats
    g = guest("ext3-extents", ["--direct", "--disk", f"{img},if=virtio-blk,rw"])
    g.wait_shell()
    g.check("mount /dev/vda /mnt")
    g.check("cd /mnt && sha256sum -c SHA256SUMS >/dev/null && cd /")
    g.check("dd if=/dev/urandom of=/mnt/new bs=64k count=16 2>/dev/null && sync && umount /mnt")
    status, out = g.run("e2fsck -fn /dev/vda")
    assert status == 0, out
    assert g.poweroff() == 0
    g.assert_no_fatal()
    fsck_clean(img)
    assert len(cat(img, "/new")) == 1 << 20


def test_external_journal_on_another_controller(guest, tmp_path):
    journal = str(tmp_path / "journal.img")
    fs = str(tmp_path / "fs.img")
    subprocess.run(["truncate", "-s", "32M", journal, fs], check=True)
    subprocess.run(["mke2fs", "-q", "-F", "-O", "journal_dev", "-b", "4096", "-L", "xrjournal", journal], check=True)
    # mke2fs attaches an external journal only from a block device.
    jloop = host(["losetup", "-f", "--show", journal]).stdout.strip()
    try:
        subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", "-J", f"device={jloop}",
                        "-L", "xrdata", fs], check=True)
    finally:
        subprocess.run(["losetup", "-d", jloop])
    g = guest("external-journal", ["--direct", "--disk", f"{fs},if=virtio-blk,rw",
                                   "--disk", f"{journal},if=ahci,rw"])
    g.wait_shell()
    jdev = g.check("blkid -L xrjournal").strip()
    assert jdev.startswith("/dev/sd"), jdev
    g.check(f"mount -t ext4 -o journal_path={jdev} /dev/vda /mnt")
    g.check("echo journalled > /mnt/file && sync && umount /mnt")
    status, out = g.run(f"e2fsck -fn -j {jdev} /dev/vda")
    assert status == 0, out
    assert g.poweroff() == 0
    g.assert_no_fatal()
    assert cat(fs, "/file") == b"journalled\n"
