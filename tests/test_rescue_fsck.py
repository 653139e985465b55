"""Unattended check and repair from the kernel command line, with undo."""
import os
import re
import shutil
import subprocess

from disks import blank, cat, damaged, fsck_clean, make_fs, sha256_file, tree
from harness import boot_with_disks, host, run_to_poweroff


def test_check_reports_and_writes_nothing(guest, tmp_path):
    bad = damaged(tmp_path, "bad")
    good = str(tmp_path / "good.img")
    make_fs(good, "32M", label="good")
    before = [sha256_file(bad), sha256_file(good)]
    log = run_to_poweroff(guest, "fsck-check", [bad, good], "rescue.fsck=check")
    assert "rescue-fsck check: summary" in log, log[-2000:]
    assert "/dev/vda         4      errors found (not fixed: read-only check)" in log, log[-2000:]
    assert "/dev/vdb         0      clean" in log, log[-2000:]
    assert [sha256_file(bad), sha256_file(good)] == before, "a read-only check wrote to a disk"


def damaged_and_undo_disk(tmp_path, name):
    """A damaged volume, a copy of it as it was, and a blank ext4 for undo files."""
    bad = damaged(tmp_path, name)
    original = str(tmp_path / f"{name}.orig")
    shutil.copy(bad, original)
    undo_disk = str(tmp_path / "undo.img")
    make_fs(undo_disk, "64M", label="undo")
    return bad, original, undo_disk


def dump(img, path, to):
    subprocess.run(["debugfs", "-R", f"dump {path} {to}", img], check=True, capture_output=True)
    return str(to)


def repair_with_undo(guest, tmp_path, name, arch="x86_64", timeout=180):
    """rescue.fsck=repair of a damaged volume on ARCH, its undo file on a
    disk labelled undo: the host's e2fsck finds the volume clean, files
    outside the damage survive, and the undo file takes the repair back."""
    bad, original, undo_disk = damaged_and_undo_disk(tmp_path, "bad")
    log = run_to_poweroff(guest, name, [bad, undo_disk],
                          "rescue.fsck=repair rescue.devices=vda rescue.undo=LABEL=undo", arch=arch, timeout=timeout)
    m = re.search(r"e2undo /run/undo-disk(/extrescue-undo/vda-\d{8}-\d{6}-0\.e2undo) /dev/vda", log)
    assert "errors corrected" in log and m, log[-2000:]
    fsck_clean(bad)
    # Files outside the damage survive; the cleared one is gone (or in lost+found).
    assert cat(bad, "/dir0/file000") and cat(bad, "/dir2/file002")
    r = host(["e2undo", dump(undo_disk, m.group(1), tmp_path / "vda.e2undo"), bad])
    assert r.returncode == 0, r.stdout + r.stderr
    assert sha256_file(bad) == sha256_file(original), "e2undo did not restore the damaged original"


def test_repair_with_undo_on_a_named_disk(guest, tmp_path):
    repair_with_undo(guest, tmp_path, "fsck-repair")


def test_two_repairs_keep_both_undo_files(guest, tmp_path):
    bad, original, undo_disk = damaged_and_undo_disk(tmp_path, "twice")
    g = boot_with_disks(guest, "fsck-twice", [bad, undo_disk])
    g.check("mkdir -p /mnt/u && mount /dev/vdb /mnt/u")
    first = g.run("rescue-fsck repair --undo-dir /mnt/u /dev/vda", timeout=120)[1]
    second = g.run("rescue-fsck repair --undo-dir /mnt/u /dev/vda", timeout=120)[1]
    names = [os.path.basename(n) for n in g.check("find /mnt/u -name '*.e2undo'").split()]
    g.check("umount /mnt/u")
    assert g.poweroff() == 0
    assert len(names) == 2 and names[0] != names[1], (names, first, second)
    assert all(f"e2undo /mnt/u/{n} /dev/vda" in first + second for n in names), first + second
    fsck_clean(bad)
    # The second repair taken back, then the first: the damaged original.
    for n in sorted(names, key=lambda n: (n.split("-")[1:], n), reverse=True):
        r = host(["e2undo", dump(undo_disk, f"/{n}", tmp_path / n), bad])
        assert r.returncode == 0, r.stdout + r.stderr
    assert sha256_file(bad) == sha256_file(original), "two e2undo runs did not give back the original"


def test_undo_space_runs_out(guest, tmp_path):
    """A repair that writes more than the undo disk holds stops there, and the
    volume is put back exactly as it was."""
    src = tmp_path / "many"
    src.mkdir()
    for i in range(3000):
        (src / f"f{i}").write_text(f"{i}\n")
    bad = str(tmp_path / "many.img")
    make_fs(bad, "64M", label="many", populate=str(src), options=["-b", "4096"])
    with open(bad, "r+b") as f:           # garbage over the inode table's first 1.2 MiB
        f.seek(45 * 4096)
        f.write(bytes((i * 7919 + 13) % 251 for i in range(300 * 4096)))
    before = sha256_file(bad)
    tiny = str(tmp_path / "tiny.img")
    make_fs(tiny, "512K", fstype="ext2", label="xrtiny")
    log = run_to_poweroff(guest, "fsck-undo-full", [bad, tiny],
                          "rescue.fsck=repair rescue.devices=vda rescue.undo=LABEL=xrtiny")
    assert "repair stopped: the undo file ran out of space" in log and "No space left on device" in log, log[-3000:]
    assert "the volume is back as it was" in log, log[-3000:]
    assert sha256_file(bad) == before, "the stopped repair left changes on the volume"


def test_repair_then_poweroff_needs_a_place_for_undo(guest, tmp_path):
    bad = damaged(tmp_path, "ram")
    before = sha256_file(bad)
    log = run_to_poweroff(guest, "fsck-ram-poweroff", [bad], "rescue.fsck=repair")
    assert "rescue.after=poweroff would lose the undo files (in RAM); nothing repaired" in log, log[-2000:]
    assert sha256_file(bad) == before, "a refused repair wrote to the disk"


def test_ram_guard_on_lvm_and_luks(guest, tmp_path):
    """Undo files in RAM: a 3 GiB logical volume and a 3 GiB LUKS volume do
    not fit a tenth of themselves into 512 MiB, so neither is repaired."""
    pv = blank(str(tmp_path / "pv.img"), "3200M")
    crypt = blank(str(tmp_path / "crypt.img"), "3200M")
    g = boot_with_disks(guest, "fsck-ram-guard", [pv, crypt])
    g.check("mkdir -p /run/lock/lvm && lvm pvcreate -q /dev/vda && lvm vgcreate -q xrgvg /dev/vda && "
            "lvm lvcreate -q -L 3G -n big xrgvg && mkfs.ext4 -q /dev/xrgvg/big", timeout=300)
    g.check("printf pw > /run/k && cryptsetup luksFormat --batch-mode --type luks2 --pbkdf pbkdf2 "
            "--pbkdf-force-iterations 1000 --key-file=/run/k /dev/vdb && "
            "cryptsetup open --key-file=/run/k /dev/vdb xrgbig && mkfs.ext4 -q /dev/mapper/xrgbig", timeout=300)
    status, out = g.run("rescue-fsck repair /dev/xrgvg/big /dev/mapper/xrgbig", timeout=120)
    assert status == 8, out
    for dev in ("/dev/xrgvg/big", "/dev/mapper/xrgbig"):
        assert f"{dev}: no room in RAM for an undo file" in out, out
    assert out.count("not repaired: no room for the undo file") == 2, out
    assert g.poweroff() == 0


def test_progress_lines_in_an_unattended_check(guest, tmp_path):
    """A check that takes a while prints where it is on every console."""
    img = str(tmp_path / "slow.img")
    make_fs(img, "3G", label="slow", options=["-N", "3000000", "-O", "^metadata_csum,^uninit_bg",
                                                 "-E", "lazy_itable_init=0"])
    log = run_to_poweroff(guest, "fsck-progress", [img], "rescue.fsck=check rescue.progress=1", timeout=600)
    lines = re.findall(r"extrescue: /dev/vda: pass (\d) of 5, (\d+)% done, (\d+)m(\d+)s so far", log)
    assert len(lines) >= 2, log[-3000:]
    done = [int(p) for _, p, _, _ in lines]
    assert done == sorted(done) and done[-1] > done[0], lines


def inodes_left(img, free):
    """Takes IMG's free inodes (FIFOs, no blocks) until FREE are left."""
    have = int(re.search(r"Free inodes:\s+(\d+)", host(["dumpe2fs", "-h", img]).stdout).group(1))
    cmds = os.path.join(os.path.dirname(img), "fill.debugfs")
    with open(cmds, "w") as f:
        f.write("".join(f"mknod taken{i} p\n" for i in range(have - free)))
    subprocess.run(["debugfs", "-w", "-f", cmds, img], check=True, capture_output=True)
    assert f"Free inodes:              {free}\n" in host(["dumpe2fs", "-h", img]).stdout


def test_both_undo_files_named_and_no_undo_file_stops_nothing(guest, tmp_path):
    """A volume that opens only from the backup superblock gets two undo
    files and the summary names both, the last first; then the undo disk can
    hold no more files, and the volumes after it are named in the summary as
    not repaired instead of the run stopping there."""
    src = tmp_path / "gd-tree"
    src.mkdir()
    tree(str(src), files=12)
    gd = str(tmp_path / "gd.img")
    make_fs(gd, "64M", label="xrgd", populate=str(src), options=["-b", "1024"])
    with open(gd, "r+b") as f:          # the group descriptors (block 2) zeroed
        f.seek(2048)
        f.write(bytes(1024))
    original = str(tmp_path / "gd.orig")
    shutil.copy(gd, original)
    b, c = damaged(tmp_path, "xrb"), damaged(tmp_path, "xrc")
    before = [sha256_file(b), sha256_file(c)]
    # Room for exactly two undo files: the first try's and the second's.
    undo_disk = str(tmp_path / "undo.img")
    make_fs(undo_disk, "32M", fstype="ext2", label="xrundo", options=["-N", "64"])
    inodes_left(undo_disk, 2)

    g = boot_with_disks(guest, "fsck-undo-names", [gd, b, c, undo_disk])
    g.check("mkdir -p /mnt/u && mount /dev/vdd /mnt/u")
    status, out = g.run("rescue-fsck repair --undo-dir /mnt/u /dev/vda /dev/vdb /dev/vdc", timeout=300)
    g.check("umount /mnt/u")
    assert g.poweroff() == 0
    assert "/dev/vda did not open; again from the backup superblock" in out, out[-3000:]
    assert "rescue-fsck repair: summary" in out, "the run stopped before its summary: " + out[-3000:]
    summary = out.split("rescue-fsck repair: summary")[1]
    m = re.search(r"^/dev/vda\s+\d+\s+errors corrected.*\(undo: e2undo /mnt/u/(vda-\d{8}-\d{6}-\d+\.e2undo) /dev/vda, "
                  r"then e2undo /mnt/u/(vda-\d{8}-\d{6}-\d+\.e2undo) /dev/vda\)", summary, re.M)
    assert m and m.group(1) != m.group(2), summary
    for dev in ("/dev/vdb", "/dev/vdc"):
        assert re.search(rf"^{dev}\s+-\s+not repaired: cannot create an undo file in /mnt/u$", summary, re.M), summary
        assert f"rescue-fsck: {dev}: cannot create an undo file in /mnt/u" in out, out[-3000:]
    assert status & 8, f"exit status {status}: a volume left unrepaired is an operational error (8)"
    assert [sha256_file(b), sha256_file(c)] == before, "a volume without an undo file was written"
    fsck_clean(gd)
    # Taken back in the order named, the volume is the damaged one again (the
    # first try did not open it, so its file may hold nothing to take back).
    r = host(["e2undo", dump(undo_disk, f"/{m.group(1)}", tmp_path / "second.e2undo"), gd])
    assert r.returncode == 0, r.stdout + r.stderr
    host(["e2undo", dump(undo_disk, f"/{m.group(2)}", tmp_path / "first.e2undo"), gd])
    assert sha256_file(gd) == sha256_file(original), "the two undo files did not give back the original"
