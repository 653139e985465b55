"""rescue-mount follows an old system's fstab (ext4dev, extents,mballoc) read-only."""
import os
import shutil

from disks import cat, fsck_clean, make_fs, sha256_file
from harness import OUT


def test_legacy_fstab_mounts_read_only_and_chroots(guest, tmp_path):
    data_tree = tmp_path / "data"
    data_tree.mkdir()
    (data_tree / "hello").write_text("from the data volume\n")
    data = str(tmp_path / "data.img")
    make_fs(data, "32M", label="xrdata", populate=str(data_tree))

    root_tree = tmp_path / "root"
    (root_tree / "etc").mkdir(parents=True)
    (root_tree / "bin").mkdir()
    (root_tree / "data").mkdir()
    (root_tree / "old").mkdir()
    for d in ("dev", "proc", "sys", "run"):
        (root_tree / d).mkdir()
    shutil.copy(os.path.join(OUT, "build", "busybox", "busybox"), root_tree / "bin" / "busybox")
    os.symlink("busybox", root_tree / "bin" / "sh")
    os.symlink("busybox", root_tree / "bin" / "cat")
    (root_tree / "etc" / "fstab").write_text(
        "# an fstab of the ext4dev era\n"
        "LABEL=xrroot  /      ext4dev  defaults,extents,mballoc            0 1\n"
        "LABEL=xrdata  /data  ext4dev  defaults,extents,mballoc,delalloc   0 2\n"
        "LABEL=xrold   /old   ext3     defaults,nofail,x-systemd.device-timeout=5 0 2\n"
        "/dev/vdz      /gone  ext4     defaults                            0 2\n"
        "tmpfs         /tmp   tmpfs    defaults                            0 0\n"
        "/dev/vdx1     none   swap     sw                                  0 0\n")
    root = str(tmp_path / "root.img")
    make_fs(root, "64M", label="xrroot", populate=str(root_tree))
    old = str(tmp_path / "old.img")
    make_fs(old, "32M", fstype="ext3", label="xrold")
    disks = [root, data, old]
    before = [sha256_file(d) for d in disks]

    args = ["--direct"]
    for d in disks:
        args += ["--disk", f"{d},if=virtio-blk,rw"]
    g = guest("rescue-mount", args)
    g.wait_shell()
    status, out = g.run("rescue-mount")
    assert status == 2 and "xrroot" in out and "xrdata" in out, out
    out = g.check("rescue-mount LABEL=xrroot")
    assert "skipped: device not found" in out and "/gone" in out, out
    mounts = g.check("cat /proc/mounts")
    assert "/mnt/root/data ext4dev ro" in mounts, mounts
    assert "/mnt/root/old ext3 ro" in mounts, mounts
    assert "/mnt/root/proc" in mounts and "/mnt/root/dev" in mounts
    assert g.check("rescue-chroot /bin/cat /data/hello").strip() == "from the data volume"
    assert g.run("touch /mnt/root/data/new")[0] != 0, "a read-only mount took a write"
    assert "Ignoring removed extents option" in g.check("dmesg")
    g.check("rescue-mount --umount && sync")
    assert "/mnt/root" not in g.check("cat /proc/mounts")
    changed = [os.path.basename(d) for d, b in zip(disks, before) if sha256_file(d) != b]
    assert not changed, f"the read-only session wrote to {changed}"
    # --rw, explicitly: now a write goes through.
    g.check("rescue-mount --rw LABEL=xrroot && echo written > /mnt/root/data/new && rescue-mount --umount")
    assert g.poweroff() == 0
    g.assert_no_fatal()
    fsck_clean(data)
    assert cat(data, "/new") == b"written\n"
