"""rescue-mount follows an old system's fstab (ext4dev, extents,mballoc) read-only."""
import os
import re
import shutil

from disks import cat, damaged, fsck_clean, make_fs, sha256_file
from harness import OUT, boot_with_disks, host, scaled


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
    # --rw, explicitly: now a write goes through, on every volume mounted.
    g.check("rescue-mount LABEL=xrroot && rescue-mount --rw && echo written > /mnt/root/data/new && "
            "touch /mnt/root/old/x && rescue-mount --umount")
    # A list left behind by unmounting by hand does not block the next session.
    g.check("rescue-mount LABEL=xrroot && umount -l /mnt/root && rescue-mount LABEL=xrroot && rescue-mount --umount")
    assert g.poweroff() == 0
    g.assert_no_fatal()
    fsck_clean(data)
    assert cat(data, "/new") == b"written\n"


# What the rescue system's own tree looks like, hashed in the guest.
TREE_HASH = ("find /usr /bin /sbin /etc /lib \\( -type f -o -type l \\) 2>/dev/null | sort | "
             "while read -r f; do if [ -L \"$f\" ]; then echo \"$f -> $(readlink \"$f\")\"; "
             "else sha256sum \"$f\"; fi; done | sha256sum")


def test_hostile_root_stays_inside(guest, tmp_path):
    """fstab mount points with .. and through absolute symlinks, crypttab and
    mdadm.conf names with /, .., spaces and shell code: nothing lands outside
    /mnt/root, nothing runs, and each refused line is named."""
    data = str(tmp_path / "data.img")
    make_fs(data, "32M", label="xrhdata")
    data2 = str(tmp_path / "data2.img")
    make_fs(data2, "32M", label="xrhdata2")
    root_tree = tmp_path / "root"
    for d in ("etc/mdadm", "usr/sbin", "bin", "dev", "proc", "sys", "run"):
        (root_tree / d).mkdir(parents=True)
    os.symlink("/bin", root_tree / "evil")          # absolute: the root's /bin, not ours
    os.symlink("/usr/sbin", root_tree / "dev2")
    (root_tree / "etc" / "fstab").write_text(
        "LABEL=xrhroot  /                ext4 defaults 0 1\n"
        "LABEL=xrhdata  /../../usr/sbin  ext4 defaults 0 2\n"
        "LABEL=xrhdata2 /evil            ext4 defaults 0 2\n")
    (root_tree / "etc" / "crypttab").write_text(
        "../../etc/passwd /dev/vdb none luks\n"
        "a/b UUID=x none\n"
        "$(touch${IFS}/tmp/pwned) /dev/vdb none\n"
        "x;touch${IFS}/tmp/pwned2 /dev/vdb none\n")
    (root_tree / "etc" / "mdadm" / "mdadm.conf").write_text(
        "ARRAY /dev/../etc/evil UUID=1:2:3:4\n"
        "ARRAY /tmp/evil UUID=1:2:3:4\n"
        "ARRAY /dev/md/$(touch${IFS}/tmp/pwned3) UUID=1:2:3:4\n")
    root = str(tmp_path / "root.img")
    make_fs(root, "32M", label="xrhroot", populate=str(root_tree))
    disks = [root, data, data2]
    before = [sha256_file(d) for d in disks]

    g = boot_with_disks(guest, "rescue-mount-hostile", disks)
    tree_before = g.check(TREE_HASH, timeout=120)
    out = g.check("rescue-mount LABEL=xrhroot")
    mounts = g.check("cat /proc/mounts")
    assert "/dev/vdb /mnt/root/usr/sbin ext4 ro" in mounts, mounts
    assert "/dev/vdc /mnt/root/bin ext4 ro" in mounts, mounts
    assert not [m for m in mounts.splitlines() if m.split()[1] in ("/usr/sbin", "/bin", "/etc", "/sbin")], mounts
    assert out.count("(crypttab)") == 4 and out.count("is not a plain name") == 4, out
    assert out.count("(mdadm.conf)") == 3 and out.count("is not /dev/mdN or /dev/md/NAME") == 3, out
    g.check("rescue-mount --umount")
    assert g.check(TREE_HASH, timeout=120) == tree_before, "the rescue system's own tree changed"
    assert g.check("ls /tmp /etc/evil /tmp/evil 2>&1; true").count("pwned") == 0
    assert g.poweroff() == 0
    g.assert_no_fatal()
    assert [sha256_file(d) for d in disks] == before, "the read-only session wrote to a disk"


def test_disk_added_after_boot_is_announced(guest, tmp_path):
    first = str(tmp_path / "first.img")
    make_fs(first, "16M", label="xrfirst")
    late = str(tmp_path / "late.img")
    make_fs(late, "24M", label="xrlate")
    g = guest("hotplug", ["--direct", "--disk", f"{first},if=virtio-scsi"])
    g.wait_shell()
    # QEMU's monitor shares the serial line: Ctrl-A c switches to it and back.
    g.child.send("\x01c")
    g.child.expect(r"\(qemu\)")
    g.child.sendline(f"drive_add 0 if=none,id=late,file={late},format=raw,readonly=on")
    g.child.expect(r"\(qemu\)")
    g.child.sendline("device_add scsi-hd,drive=late,bus=virtioscsi0.0,serial=late")
    g.child.expect(r"\(qemu\)")
    g.child.send("\x01c")
    g.expect([r"extrescue: new disk sd\w+: 24 MiB"], scaled(20), "the new disk's announcement")
    g.expect([r"xrlate"], scaled(10), "extscan's line for the new disk")
    assert g.poweroff() == 0
    g.assert_no_fatal()


def test_errors_panic_never_reaches_the_kernel(guest, tmp_path):
    """errors=panic in the target's fstab, or as a damaged volume's own
    default (tune2fs -e panic): a read-only look that reads the damage must
    not panic the rescue system, nor write (errors=continue: remount-ro
    would abort the journal, which writes its superblock), and an option the
    kernel does not know is named and dropped rather than failing the
    mount."""
    data = damaged(tmp_path, "xrdata")
    host(["tune2fs", "-e", "panic", data], check=True)
    logs = str(tmp_path / "logs.img")
    make_fs(logs, "32M", label="xrlogs")
    root_tree = tmp_path / "root"
    for d in ("etc", "data", "logs", "dev", "proc", "sys", "run"):
        (root_tree / d).mkdir(parents=True)
    (root_tree / "etc" / "fstab").write_text(
        "LABEL=xrroot  /      ext4  defaults                              0 1\n"
        "LABEL=xrdata  /data  ext4  defaults,no_such_option               0 2\n"
        "LABEL=xrlogs  /logs  ext4  defaults,errors=panic                 0 2\n")
    root = str(tmp_path / "root.img")
    make_fs(root, "32M", label="xrroot", populate=str(root_tree))
    before = [sha256_file(d) for d in (root, data, logs)]
    g = boot_with_disks(guest, "fstab-errors-panic", [root, data, logs])
    out = g.check("rescue-mount LABEL=xrroot")
    assert "(dropped: no_such_option)" in out and "(errors=panic became errors=continue (a read-only look))" in out, out
    # The superblock's panic overridden (the kernel shows errors= where it differs from the superblock's).
    assert re.search(r" /mnt/root/data ext4 ro,[^ ]*errors=continue", g.check("cat /proc/mounts"))
    # The cleared inode: listing its directory with stat raises the kernel's error.
    g.run("ls -l /mnt/root/data/dir1")
    assert "EXT4-fs error" in g.check("dmesg"), "the damage raised no error: the test shows nothing"
    assert g.check("echo still-up").strip() == "still-up"
    g.check("rescue-mount --umount")
    assert g.poweroff() == 0
    g.assert_no_fatal()
    assert [sha256_file(d) for d in (root, data, logs)] == before, "the read-only look wrote"
