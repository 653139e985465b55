"""What the broken system holds and what its disks do is hostile: rescue-fstab
writes its fstab without following a name it planted (fstab.new as a symlink
to another disk), fstab fields and mount points with a space are decoded and
used whole (mounted, unmounted, found mounted read-write), and a disk that
never answers a read does not stop rescue-assemble. inroot --replace, which
does every write into the target, is checked on the host too (its host build and its
arm64 build)."""
import os
import re
import stat
import subprocess
import time

import pytest

from disks import blank, cat, fsck_clean, make_fs, sha256_file
from harness import SRC_BUILDS, boot_with_disks, host, scaled, src_program


@pytest.fixture(scope="module", params=SRC_BUILDS)
def inroot(request):
    return src_program("inroot", request.param)


def replace(inroot, root, path, data, *suffix):
    return subprocess.run([*inroot, "--replace", str(root), path, *suffix], input=data,
                          capture_output=True, text=True)


def test_inroot_replace_writes_inside_and_follows_nothing_planted(inroot, tmp_path):
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "real").mkdir()
    victim = tmp_path / "victim"
    victim.write_text("the rescue system's own file\n")
    old = root / "real" / "fstab"
    old.write_text("old fstab\n")
    old.chmod(0o640)
    os.utime(old, (1000000000, 1000000000))
    # An absolute link is the target's own path; the others point out of it.
    os.symlink("/real/fstab", root / "etc" / "fstab")
    os.symlink(str(victim), root / "etc" / "fstab.new")
    os.symlink("../../../../../../" + str(victim), root / "etc" / "passwd")
    os.symlink(str(victim), root / "real" / "fstab.planted")

    r = replace(inroot, root, "/etc/fstab", "new fstab\n", ".kept")
    assert r.returncode == 0 and r.stdout == f"{old}\n", r.stderr
    assert old.read_text() == "new fstab\n" and stat.S_IMODE(old.stat().st_mode) == 0o640
    kept = root / "real" / "fstab.kept"
    assert kept.read_text() == "old fstab\n" and kept.stat().st_mtime == 1000000000
    assert os.readlink(root / "etc" / "fstab") == "/real/fstab", "the link itself was replaced"
    assert sorted(os.listdir(root / "real")) == ["fstab", "fstab.kept", "fstab.planted"], "a temporary file was left"

    # A name that exists is never written again, a planted link least of all.
    for path, suffix in [("/etc/fstab", [".kept"]), ("/etc/fstab", [".planted"]), ("/etc/fstab.new", []),
                         ("/etc/passwd", []), ("/etc", []), ("/etc/fstab", ["/../x"])]:
        r = replace(inroot, root, path, "evil\n", *suffix)
        assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, (path, suffix, r.stderr)
        assert r.stderr.startswith(f"inroot: cannot replace {path} inside {root}: "), r.stderr
    assert victim.read_text() == "the rescue system's own file\n"
    assert old.read_text() == "new fstab\n"


def test_inroot_replace_stays_on_the_roots_filesystem(inroot, tmp_path):
    """rescue-mount binds /dev and /run into the target's tree: a path that
    crosses into a mount beneath the root is refused before anything is
    written. /dev/shm beneath /dev stands in for it on the host."""
    mounts = [line.split()[1] for line in open("/proc/mounts")]
    if "/dev" not in mounts or "/dev/shm" not in mounts:
        pytest.skip("no /dev/shm mount beneath /dev on this host")
    target = f"/dev/shm/xr-inroot-{os.getpid()}"
    with open(target, "w") as f:
        f.write("untouched\n")
    try:
        r = replace(inroot, "/dev", target[len("/dev"):], "evil\n")
        assert r.returncode == 1 and "leads off the root's own filesystem" in r.stderr, r.stderr
        with open(target) as f:
            assert f.read() == "untouched\n"
    finally:
        os.unlink(target)


FSTAB = ("# an old server's fstab\n"
         "LABEL=xrhroot / ext4dev defaults,extents,mballoc 0 1\n"
         "LABEL=xrspace /srv/my\\040data ext4 defaults 0 2\n"
         "UUID=0a0b0c0d-0000-4000-8000-000000000001 /old ext4dev noauto,extents 0 0\n"
         "proc /proc proc defaults 0 0\n")
FSTAB_NEW = ("# an old server's fstab\n"
             "LABEL=xrhroot / ext4 defaults 0 1\n"
             "LABEL=xrspace /srv/my\\040data ext4 defaults 0 2\n"
             "UUID=0a0b0c0d-0000-4000-8000-000000000001 /old ext4 noauto 0 0\n"
             "proc /proc proc defaults 0 0\n")


def debugfs(img, command):
    return subprocess.run(["debugfs", "-R", command, img], capture_output=True, text=True).stdout


def test_fstab_rewrite_follows_no_planted_link_and_spaces_are_decoded(guest, tmp_path):
    tree = tmp_path / "tree"
    for d in ("etc", "dev", "proc", "sys", "run", "tmp", "srv/my data"):
        (tree / d).mkdir(parents=True)
    (tree / "etc" / "fstab").write_text(FSTAB)
    # The broken system's tree holds a link to another disk where the new
    # fstab used to be written.
    os.symlink("/dev/vdc", tree / "etc" / "fstab.new")
    root = str(tmp_path / "root.img")
    make_fs(root, "32M", label="xrhroot", populate=str(tree))
    data = tmp_path / "data"
    data.mkdir()
    (data / "hello").write_text("on the disk with a space in its mount point\n")
    space = str(tmp_path / "space.img")
    make_fs(space, "16M", label="xrspace", populate=str(data))
    victim = str(tmp_path / "victim.img")
    with open(victim, "wb") as f:
        f.write(os.urandom(4 << 20))
    victim_sum = sha256_file(victim)

    g = boot_with_disks(guest, "hostile-fstab", [root, space, victim])
    # A root mounted by hand where the path holds a space: /proc/mounts says
    # "/mnt/my\040root", and it is read-write all the same.
    g.check("mkdir -p '/mnt/my root' && mount /dev/vda '/mnt/my root'")
    out = g.check("rescue-fstab --write '/mnt/my root'")
    assert "rescue-fstab: /mnt/my root/etc/fstab rewritten; the old one is /mnt/my root/etc/fstab.extrescue-" in out, out
    assert g.check("cat '/mnt/my root/etc/fstab'").strip() == FSTAB_NEW.strip()
    assert g.check("cat '/mnt/my root/etc/fstab'.extrescue-*").strip() == FSTAB.strip()
    # Back to the old fstab for rescue-mount's round.
    g.check("cd '/mnt/my root/etc' && cat fstab.extrescue-* > fstab && rm fstab.extrescue-* && cd / && "
            "umount '/mnt/my root'")

    # rescue-mount mounts the entry with a space where it says, and binds
    # /dev inside: both by its path and inside the root, etc/fstab.new now
    # leads to the real /dev/vdc.
    out = g.check("rescue-mount --rw /dev/vda", timeout=120)
    assert g.run("mountpoint -q '/mnt/root/srv/my data'")[0] == 0, out
    assert "with a space" in g.check("cat '/mnt/root/srv/my data/hello'"), out
    assert g.run("[ -b /mnt/root/etc/fstab.new ] && [ -b /mnt/root/dev/vdc ]")[0] == 0, "the trap is not set"
    out = g.check("rescue-fstab --write")
    assert "line 2: /: type ext4dev -> ext4; options extents, mballoc dropped" in out, out
    assert re.search(r"rescue-fstab: /mnt/root/etc/fstab rewritten; the old one is "
                     r"/mnt/root/etc/fstab\.extrescue-\d{8}-\d{6}$", out, re.M), out
    # Unmounted again by its decoded path, every one of them.
    g.check("rescue-mount --umount", timeout=120)
    assert "/mnt/root" not in g.check("cat /proc/mounts")
    # The way out (poweroff) unmounts it too: nothing left to replay.
    g.check("rescue-mount --rw /dev/vda", timeout=120)
    assert g.run("mountpoint -q '/mnt/root/srv/my data'")[0] == 0
    assert g.poweroff("poweroff") == 0
    g.assert_no_fatal()

    assert sha256_file(victim) == victim_sum, "the disk behind the planted fstab.new was written"
    assert "Type: regular" in debugfs(root, "stat /etc/fstab")
    assert cat(root, "/etc/fstab").decode() == FSTAB_NEW
    link = debugfs(root, "stat /etc/fstab.new")
    assert "Type: symlink" in link and '"/dev/vdc"' in link, link
    kept = re.findall(r"fstab\.extrescue-\d{8}-\d{6}", debugfs(root, "ls /etc"))
    assert len(kept) == 1 and cat(root, f"/etc/{kept[0]}").decode() == FSTAB, kept
    assert "needs_recovery" not in host(["dumpe2fs", "-h", space]).stdout, "poweroff left it mounted"
    fsck_clean(space)
    fsck_clean(root)


def monitor(g, command):
    """One command on QEMU's monitor, which shares the serial line."""
    g.child.send("\x01c")
    g.child.expect(r"\(qemu\)")
    g.child.sendline(command)
    g.child.expect(r"\(qemu\)")
    said = g.child.before
    g.child.send("\x01c")
    return said


HANG_WWN, FAIL_WWN, MPATH_WWN = "0x5000c500000000a1", "0x5000c500000000a2", "0x5000c500000000a3"


def test_a_disk_that_never_answers_does_not_stop_assembly(guest, tmp_path):
    """One disk whose read hangs (a blkdebug breakpoint holds it until told),
    one whose first MiB fails to read, and a healthy disk over two paths: the
    probe gives up on the first within its bound and names it, names the
    second, still groups the third, and finishes (mdadm, LVM and LUKS probes
    leaving the first alone) while the read is still held."""
    hang = blank(str(tmp_path / "hang.img"), "64M")
    fail = blank(str(tmp_path / "fail.img"), "64M")
    mpath = str(tmp_path / "mpath.img")
    make_fs(mpath, "64M", label="xrmpath")
    cfg = tmp_path / "fail.conf"
    cfg.write_text('[inject-error]\nevent = "read_aio"\nerrno = "5"\nsector = "100"\nonce = "off"\n')
    args = ["--direct", "--mem", "768", "--",
            "-device", "virtio-scsi-pci,id=hba0", "-device", "virtio-scsi-pci,id=hba1"]
    for n in range(2):
        args += ["-drive", f"if=none,id=path{n},format=raw,readonly=on,file={mpath},file.locking=off",
                 "-device", f"scsi-hd,drive=path{n},bus=hba{n}.0,serial=XRMPATH,wwn={MPATH_WWN}"]
    args += ["-drive", f"if=none,id=hang,format=raw,readonly=on,file.driver=blkdebug,"
                       f"file.image.driver=file,file.image.filename={hang}",
             "-device", f"scsi-hd,drive=hang,bus=hba0.0,serial=XRHANG,wwn={HANG_WWN}",
             "-drive", f"if=none,id=fail,format=raw,readonly=on,file.driver=blkdebug,file.config={cfg},"
                       f"file.image.driver=file,file.image.filename={fail}",
             "-device", f"scsi-hd,drive=fail,bus=hba1.0,serial=XRFAIL,wwn={FAIL_WWN}"]
    g = guest("dying-disk", args)
    g.wait_shell()
    names = dict(line.split() for line in g.check(
        "for d in /sys/block/sd*; do echo $(cat $d/device/wwid) ${d##*/}; done").split("\n") if line)
    hung, failing = names[f"naa.{HANG_WWN[2:]}"], names[f"naa.{FAIL_WWN[2:]}"]
    # Nothing of it cached, so the probe's read reaches the disk and stays
    # there; no SCSI error handling meanwhile (its reset would wait on the
    # held read inside QEMU).
    g.check(f"blockdev --flushbufs /dev/{hung} && echo 600 > /sys/block/{hung}/device/timeout")
    said = monitor(g, 'qemu-io hang "break read_aio xrhang"')
    assert "rror" not in said and "not found" not in said, said
    g.check("{ (rescue-assemble --quiet > /tmp/ra.out 2>&1; echo $? > /tmp/ra.status) < /dev/null > /dev/null 2>&1 & }")
    started = time.monotonic()
    line = rf"/dev/{hung} \(naa\.{HANG_WWN[2:]}\): no answer within 10s to a read of its first MiB; left out"
    try:
        while not re.search(line, g.check("cat /tmp/ra.out")):
            assert time.monotonic() - started < scaled(60), \
                "rescue-assemble still waits on the disk that never answers: " + g.check("cat /tmp/ra.out")
            time.sleep(2)
        took = time.monotonic() - started
        # mdadm, LVM and blkid leave the disk alone too: the assembly ends
        # while its read is still held.
        status, _ = g.run("n=0; while [ ! -s /tmp/ra.status ] && [ $n -lt 120 ]; do sleep 1; n=$((n+1)); done; "
                          "[ -s /tmp/ra.status ]", timeout=180)
        assert status == 0, "rescue-assemble waits behind the held read after naming the disk: " + \
            g.check("cat /tmp/ra.out; ps")
    finally:
        # Let the held read finish, or QEMU could not stop.
        monitor(g, 'qemu-io hang "resume xrhang"')
    out = g.check("cat /tmp/ra.out")
    print(f"rescue-assemble named the silent disk after {took:.0f} s")
    assert took >= 9, f"it gave up after {took:.0f} s, before its 10 s bound"
    assert re.search(rf"^\s+mpath\s+/dev/{failing} \(naa\.{FAIL_WWN[2:]}\): read error in its first MiB", out, re.M), out
    assert re.search(rf"^\s+mpath\s+/dev/mapper/mpath-naa\.{MPATH_WWN[2:]} from sd\w+ sd\w+: 2 paths to one disk, "
                     r"read-only$", out, re.M), out
    assert g.check("cat /tmp/ra.status").strip() == "1", "a disk left out is a skip: exit 1"
    g.check("rescue-assemble --stop", timeout=120)
    assert g.poweroff() == 0
    g.assert_no_fatal()
