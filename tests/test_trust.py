"""No second name of a disk gets it written: another loop device over the
same file, another path to the same LUN (the same wwid), a mounted btrfs,
an overlay whose backing file is another disk. One answer (disk-inuse)
for write-stick, qemu/run --disk and --pci, and iobench; each refusal is
one line naming both names, and the host checks the bytes afterwards."""
import contextlib
import os
import re
import shutil
import subprocess
import time

from disks import fsck_clean, make_fs, sha256_file, tree
from fake_host import FakeHost
from harness import TOP, boot_with_disks, host, scaled, src_program
from test_stick import iso, write_stick

RUN = os.path.join(TOP, "qemu", "run")
WWID = "naa.5000c500a1b2c3d4"


def dry(*args, env=None):
    return host([RUN, "--dry-run", "--direct", *args], env=env)


def refused(r, *parts):
    assert r.returncode != 0, r.stdout + r.stderr
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1, line
    for p in parts:
        assert p in line, line


@contextlib.contextmanager
def loops(*imgs):
    made = []
    try:
        for img in imgs:
            dev = host(["losetup", "-f", "--show", img]).stdout.strip()
            assert dev.startswith("/dev/loop"), "losetup failed: the host needs loop device support"
            made.append(dev)
        yield made
    finally:
        for dev in made:
            subprocess.run(["losetup", "-d", dev])


@contextlib.contextmanager
def mounted(dev, mnt, *options):
    os.makedirs(mnt, exist_ok=True)
    host(["mount", *options, dev, mnt], check=True)
    try:
        yield
    finally:
        host(["umount", mnt])


def sanitized_env(env=None):
    """qemu/run asking the sanitizer build of disk-inuse."""
    tool = src_program("disk-inuse", "host")[0]
    return dict(env or os.environ, EXTRESCUE_DISK_INUSE=tool)


def test_a_second_loop_device_over_a_mounted_image(tmp_path):
    """The issue's case: two loop devices over one image, the first mounted;
    the second is refused by qemu/run, write-stick and iobench, with both
    names, and its bytes are unchanged."""
    img = str(tmp_path / "pair.img")
    make_fs(img, "128M")
    with loops(img, img) as (first, second), mounted(first, str(tmp_path / "mnt")):
        before = sha256_file(img)
        both = (f"{second} is the same storage as {first} (both loop devices over {img})",
                f"{first} is mounted on {tmp_path}/mnt")
        refused(dry("--disk", f"{second},rw", env=sanitized_env()), *both)
        refused(dry("--disk", f"{second},rw"), *both)
        r = write_stick(iso(), second, "--yes")
        assert r.returncode != 0 and all(p in r.stderr for p in both), r.stderr
        assert "nothing written" in r.stderr, r.stderr
        iobench = src_program("iobench", "host")
        r = host(iobench + ["--matrix", second, f"--yes-destroy={second}", "--force"])
        assert r.returncode != 0 and f"{second} is in use: it is the same storage as {first}" in r.stderr, r.stderr
        assert both[1] in r.stderr, r.stderr
        assert sha256_file(img) == before, "a second name of a mounted disk was written"
    # Once nothing uses either name, the second is given read-write.
    with loops(img, img) as (first, second):
        r = dry("--disk", f"{second},rw")
        assert r.returncode == 0 and f"file={second},format=raw,cache=none" in r.stdout, r.stderr


def test_write_stick_refuses_a_mounted_btrfs(tmp_path):
    """btrfs shows an anonymous device number in mountinfo (0:NN, not the
    loop's 7:N): found by name, and by the kernel's exclusive open."""
    img = str(tmp_path / "btrfs.img")
    with open(img, "wb") as f:
        f.truncate(256 << 20)
    host(["mkfs.btrfs", "-q", "-f", img], check=True)
    # Read-only: a read-write btrfs writes by itself (its commits, every 30 s),
    # which would pass for write-stick's writes.
    with loops(img) as (dev,), mounted(dev, str(tmp_path / "mnt"), "-o", "ro"):
        majmin = next(line.split()[2] for line in open("/proc/self/mountinfo") if f" {tmp_path}/mnt " in line)
        rdev = os.stat(dev).st_rdev
        assert majmin != f"{os.major(rdev)}:{os.minor(rdev)}", "btrfs showed the loop's own number"
        before = sha256_file(img)
        r = write_stick(iso(), dev, "--yes")
        assert r.returncode != 0 and f"{dev} is mounted on {tmp_path}/mnt" in r.stderr, r.stderr
        assert sha256_file(img) == before, "write-stick wrote over a mounted btrfs"


def two_paths(h, first, second):
    """FIRST and SECOND in H's sysfs with one wwid, as the two ports of a
    dual-path SAS disk, and a partition on SECOND."""
    for name in (first, second):
        h.write(os.path.join("sys", "class", "block", name, "device", "wwid"), WWID + "\n")
    h.block(f"{second}1", "8:241", parent=second)


def test_another_path_to_an_in_use_lun(tmp_path):
    """A fake host with two SCSI disks of one wwid, one mounted: the other
    is refused for --disk (a real, free loop device stands for it) and, on
    a second HBA of a dual-path JBOD, for --pci, where VFIO cannot be
    read-only."""
    img = str(tmp_path / "lun.img")
    make_fs(img, "32M")
    with loops(img) as (loop,):
        name = os.path.basename(loop)
        rdev = os.stat(loop).st_rdev
        h = FakeHost(str(tmp_path / "disk"))
        h.block(name, f"{os.major(rdev)}:{os.minor(rdev)}")
        h.block("sdxz", "8:240")
        two_paths(h, name, "sdxz")
        r = dry("--disk", loop, env=sanitized_env(h.env()))
        assert r.returncode == 0, r.stderr
        h.mountinfo([("8:241", "/dev/sdxz1", "/data")])
        refused(dry("--disk", loop, env=sanitized_env(h.env())),
                f"{loop} is the same storage as /dev/sdxz (the same wwid {WWID}): /dev/sdxz1 is mounted on /data")
        # --force-in-use: never read-write, as for the disk itself.
        refused(dry("--force-in-use", "--disk", f"{loop},rw", env=sanitized_env(h.env())), "never read-write")

    h = FakeHost(str(tmp_path / "pci"))
    h.pci("0000:01:00.0", "0x010700", "mpt3sas", "3")
    h.pci("0000:02:00.0", "0x010700", "mpt3sas", "4")
    for bdf, disk, dev in (("0000:01:00.0", "sdxy", "8:224"), ("0000:02:00.0", "sdxz", "8:240")):
        h.block(disk, dev, under=os.path.join(h.sys, "devices", "pci0000:00", bdf, "host0", "target0:0:0",
                                               "0:0:0:0", "block"))
    two_paths(h, "sdxy", "sdxz")
    args = [RUN, "--dry-run", "--iso", "/dev/null", "--pci", "01:00.0"]
    r = host(args, env=sanitized_env(h.env()))
    assert r.returncode == 0, r.stderr
    h.mountinfo([("8:241", "/dev/sdxz1", "/data")])
    refused(host(args, env=sanitized_env(h.env())),
            f"0000:01:00.0 holds a disk in use: /dev/sdxy is the same storage as /dev/sdxz (the same wwid {WWID}): "
            "/dev/sdxz1 is mounted on /data")


def test_an_overlay_over_another_disk_is_refused(tmp_path):
    """overlay= takes an existing qcow2 only when its backing file is the
    disk given: one over a mounted loop device, named beside another disk,
    would reach the guest, and its commit would write the mounted disk."""
    img, other = str(tmp_path / "mounted.img"), str(tmp_path / "other.img")
    make_fs(img, "64M")
    make_fs(other, "64M")
    ov = str(tmp_path / "ov.qcow2")
    with loops(img) as (dev,), mounted(dev, str(tmp_path / "mnt")):
        host(["qemu-img", "create", "-q", "-f", "qcow2", "-u", "-b", dev, "-F", "raw", ov, "64M"], check=True)
        before = sha256_file(img)
        refused(dry("--disk", f"{other},overlay={ov}"),
                f"overlay={ov}: its backing file is {dev}, not the disk given ({other})")
        assert sha256_file(img) == before
    # Its own disk's overlay is taken again, as the README promises.
    mine = str(tmp_path / "mine.qcow2")
    r = dry("--disk", f"{other},overlay={mine}")
    assert r.returncode == 0, r.stderr
    r = dry("--disk", f"{other},overlay={mine}")
    assert r.returncode == 0 and f"file={mine},format=qcow2" in r.stdout, r.stderr
    refused(dry("--disk", f"{img},overlay={mine}"), f"its backing file is {os.path.abspath(other)}, not the disk given")


def test_poweroff_waits_for_a_running_repair(guest, tmp_path):
    """poweroff while a repair runs (started, say, in an SSH session since
    dropped): on a terminal it asks, and n cancels; otherwise it says which
    volume and where the log is, waits, and powers off once the repair is
    done, its undo disk never unmounted under it. The host then finds the
    volume repaired and the undo file whole (it gives the original back)."""
    src = tmp_path / "tree"
    src.mkdir()
    tree(str(src), files=40)
    img = str(tmp_path / "slow.img")
    # Many inodes: e2fsck runs long enough under TCG to be caught running.
    make_fs(img, "256M", label="xrslow", populate=str(src), options=["-N", "65536"])
    host(["debugfs", "-w", "-R", "clri /dir1/file005", img], check=True)
    original = sha256_file(img)
    undo_disk = str(tmp_path / "undo.img")
    make_fs(undo_disk, "64M", label="xrundo")
    g = boot_with_disks(guest, "poweroff-waits", [img, undo_disk])
    g.check("mkdir -p /mnt/u && mount /dev/vdb /mnt/u")
    g.check("(rescue-fsck repair --undo-dir /mnt/u /dev/vda < /dev/null > /dev/null 2>&1 &)")
    g.check("(n=0; until pidof e2fsck > /dev/null; do n=$((n + 1)); [ $n -lt 2000 ] || exit 1; done; "
            "kill -STOP $(pidof e2fsck))")
    g.send_command("poweroff")
    g.expect([r"or cancel \(n\)\? \[w\] "], scaled(30), "poweroff's question")
    g.send_command("n")
    g.expect([r"poweroff: cancelled"], scaled(30), "the cancel")
    g.check("(poweroff < /dev/null > /run/poweroff.out 2>&1 &)")
    time.sleep(scaled(5))
    said = g.check("cat /run/poweroff.out")
    assert "a repair of /dev/vda is running (rescue-fsck, pid" in said, said
    assert "its log: /run/extrescue/rescue-fsck.log); waiting for it to finish" in said, said
    assert " /mnt/u " in g.check("cat /proc/mounts"), "the undo disk went while the repair ran"
    g.send_command("kill -CONT $(pidof e2fsck)")
    g.expect([r"reboot: Power down"], scaled(300), "the power-off after the repair")
    g.assert_no_fatal()
    fsck_clean(img)
    fsck_clean(undo_disk)
    names = [line.split()[-1] for line in host(["debugfs", "-R", "ls -l /", undo_disk]).stdout.splitlines()
             if line.strip().endswith(".e2undo")]
    assert len(names) == 1, names
    undo = str(tmp_path / "repair.e2undo")
    host(["debugfs", "-R", f"dump /{names[0]} {undo}", undo_disk], check=True)
    r = host(["e2undo", undo, img])
    assert r.returncode == 0, r.stdout + r.stderr
    assert sha256_file(img) == original, "the repair's undo file was cut short"


def external_journal_volume(tmp_path):
    """An ext4 volume with an external journal that holds its last
    transactions: written and fsynced on the host, and both images copied
    while mounted, before the kernel wrote the journalled blocks home (what
    a power cut leaves). Returns (volume, journal) copies."""
    journal, fs = str(tmp_path / "journal.live"), str(tmp_path / "fs.live")
    host(["truncate", "-s", "32M", journal, fs], check=True)
    host(["mke2fs", "-q", "-F", "-O", "journal_dev", "-b", "4096", "-L", "xrjournal", journal], check=True)
    with loops(journal) as (jl,):
        host(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", "-J", f"device={jl}", "-L", "xrext", fs], check=True)
        with loops(fs) as (fl,):
            mnt = str(tmp_path / "mnt")
            os.makedirs(mnt)
            host(["mount", "-o", f"journal_path={jl}", fl, mnt], check=True)
            try:
                for i in range(1, 9):
                    with open(f"{mnt}/file{i}", "w") as f:
                        f.write(f"committed-{i}\n")
                        f.flush()
                        os.fsync(f.fileno())
                # The backing files, not the loop devices: what reached them.
                vol, jour = str(tmp_path / "fs.img"), str(tmp_path / "journal.img")
                shutil.copy(fs, vol)
                shutil.copy(journal, jour)
            finally:
                host(["umount", mnt])
    assert "needs_recovery" in host(["dumpe2fs", "-h", vol]).stdout
    return vol, jour


def test_external_journal_is_inside_the_undo(guest, tmp_path):
    """A repair with undo of a volume whose external journal holds its last
    transactions: the journal's writes get an undo file of their own, the
    summary names both in the order to take them back, and e2undo of both
    gives back every byte of both devices; the volume then mounts with its
    last transactions."""
    vol, jour = external_journal_volume(tmp_path)
    orig_vol, orig_jour = sha256_file(vol), sha256_file(jour)
    undo_disk = str(tmp_path / "undo.img")
    make_fs(undo_disk, "64M", label="xrundo")
    g = boot_with_disks(guest, "external-journal-undo", [vol, jour, undo_disk])
    g.check("mkdir -p /mnt/u && mount /dev/vdc /mnt/u")
    status, out = g.run("rescue-fsck repair --undo-dir /mnt/u /dev/vda", timeout=300)
    g.check("umount /mnt/u")
    assert g.poweroff() == 0
    g.assert_no_fatal()
    summary = out.split("rescue-fsck repair: summary")[1]
    m = re.search(r"\(undo: e2undo /mnt/u/(vda-\d{8}-\d{6}-\d+-journal\.e2undo) /dev/vdb, "
                  r"then e2undo /mnt/u/(vda-\d{8}-\d{6}-\d+\.e2undo) /dev/vda\)", summary)
    assert m, summary
    assert sha256_file(jour) != orig_jour, "the repair did not replay the journal: the test shows nothing"
    for name, dev in ((m.group(1), jour), (m.group(2), vol)):
        undo = str(tmp_path / name)
        host(["debugfs", "-R", f"dump /{name} {undo}", undo_disk], check=True)
        r = host(["e2undo", undo, dev])
        assert r.returncode == 0, r.stdout + r.stderr
    assert (sha256_file(vol), sha256_file(jour)) == (orig_vol, orig_jour), "e2undo did not give both devices back"
    # Back as the power cut left it: mounted, the journal replays the last transactions.
    with loops(jour, vol) as (jl, fl):
        mnt = str(tmp_path / "back")
        os.makedirs(mnt)
        host(["mount", "-o", f"journal_path={jl}", fl, mnt], check=True)
        try:
            got = [open(f"{mnt}/file{i}").read() for i in range(1, 9)]
        finally:
            host(["umount", mnt])
    assert got == [f"committed-{i}\n" for i in range(1, 9)], got
