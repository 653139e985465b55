"""Corruption matrix: damaged ext4 and ext3+extents volumes repaired unattended
(rescue.fsck=repair); on the host every volume checks clean afterwards and
every file outside the damaged area has its original contents."""
import hashlib
import re
import subprocess

from disks import cat, make_fs, tree
from harness import host, power_cut, run_to_poweroff


def debugfs(img, *cmds, write=True):
    out = ""
    for c in cmds:
        r = subprocess.run(["debugfs"] + (["-w"] if write else []) + ["-R", c, img],
                           check=True, capture_output=True, text=True)
        out += r.stdout
    return out


def inode_of(img, path):
    return int(re.search(r"Inode:\s+(\d+)", debugfs(img, f"stat {path}", write=False)).group(1))


def zero(img, offset, length, pattern=b"\0"):
    with open(img, "r+b") as f:
        f.seek(offset)
        f.write((pattern * length)[:length])


def damage_superblock(img, sums):
    zero(img, 1024, 1024)
    return set()


def damage_group_descriptors(img, sums):
    zero(img, 2 * 1024, 1024)          # 1 KiB blocks: the descriptors start at block 2
    return set()


def damage_inode_table(img, sums):
    first = int(re.search(r"Inode table at (\d+)", host(["dumpe2fs", img]).stdout).group(1))
    isize = int(re.search(r"Inode size:\s+(\d+)", host(["dumpe2fs", "-h", img]).stdout).group(1))
    per_block = 1024 // isize
    block = first + 3                  # inodes 13-16 with 256-byte inodes
    lo, hi = 3 * per_block + 1, 4 * per_block
    zero(img, block * 1024, 1024, b"\xde\xad\xbe\xef")

    # A file is in the damaged area if its inode or a parent directory's is.
    def hit(path):
        parts = path.split("/")
        return any(lo <= inode_of(img + ".orig", "/" + "/".join(parts[:i])) <= hi
                   for i in range(1, len(parts) + 1))
    return {p for p in sums if hit(p)}


def damage_directory(img, sums):
    blk = int(debugfs(img, "bmap /dir1 0", write=False).strip())
    zero(img, blk * 1024, 1024, b"\x5a")
    return {p for p in sums if p.startswith("dir1/")}


def damage_extent_tree(img, sums):
    debugfs(img, "sif /dir2/file006 block[0] 0")
    return {"dir2/file006"}


def damage_orphan_list(img, sums):
    ino = inode_of(img, "/dir3/file007")
    debugfs(img, "sif /dir3/file007 links_count 0", "unlink /dir3/file007", f"ssv last_orphan {ino}")
    return {"dir3/file007"}


def primary_ok(img):
    """The primary superblock and group descriptors are in place again."""
    with open(img, "rb") as f:
        f.seek(1024 + 0x38)
        magic = f.read(2)
        f.seek(2 * 1024)
        gdt = f.read(1024)
    return magic == b"\x53\xef" and gdt.strip(b"\0") != b""


DAMAGES = [damage_superblock, damage_group_descriptors, damage_inode_table, damage_directory,
           damage_extent_tree, damage_orphan_list]
FLAVOURS = {"ext4": ("ext4", []), "ext3x": ("ext3", ["-O", "extents"])}


def test_corruption_matrix(guest, tmp_path):
    src = tmp_path / "tree"
    src.mkdir()
    sums = {rel: s for rel, s in tree(str(src)).items()}
    cases = []
    for flavour, (fstype, opts) in FLAVOURS.items():
        for damage in DAMAGES:
            name = f"{flavour}-{damage.__name__[7:]}"
            img = str(tmp_path / f"{name}.img")
            make_fs(img, "64M", fstype=fstype, label=name[:16], options=opts + ["-b", "1024"],
                    populate=str(src))
            subprocess.run(["cp", img, img + ".orig"], check=True)
            lost = damage(img, sums)
            # e2fsck -n quietly reads the backups of a lost superblock or descriptors.
            assert host(["e2fsck", "-fn", img]).returncode != 0 or not primary_ok(img), \
                f"{name}: the damage did not show"
            cases.append((name, img, lost))

    # Undo files on a disk of their own: in RAM they would die with the power-off.
    undo = str(tmp_path / "undo.img")
    make_fs(undo, "512M", label="xrundo")
    log = run_to_poweroff(guest, "corruption-matrix", [img for _, img, _ in cases] + [undo],
                          "rescue.fsck=repair rescue.undo=LABEL=xrundo", mem=2048, timeout=600)
    assert "rescue-fsck repair: summary" in log, log[-3000:]

    failures = []
    for name, img, lost in cases:
        r = host(["e2fsck", "-fn", img])
        if r.returncode != 0 or not primary_ok(img):
            failures.append(f"{name}: not clean after repair: {r.stdout[-400:]}")
            continue
        for rel, want in sums.items():
            if rel in lost:
                continue
            got = hashlib.sha256(cat(img, "/" + rel)).hexdigest()
            if got != want:
                failures.append(f"{name}: /{rel} changed")
    passed = len(cases) - len({f.split(':')[0] for f in failures})
    print(f"corruption matrix: {passed}/{len(cases)} volumes repaired with intact files")
    assert not failures, "\n".join(failures)


def test_journal_replay(guest, tmp_path):
    """A volume cut off mid-write (journal needing replay) is recovered by repair."""
    img = str(tmp_path / "crash.img")
    make_fs(img, "64M", label="crash", options=["-b", "4096"])
    power_cut(guest, "journal-crash", img,
              "mount /dev/vda /mnt && for i in 1 2 3 4 5; do seq 100000 > /mnt/f$i; done && sync")
    expected = subprocess.run(["seq", "100000"], capture_output=True).stdout

    log = run_to_poweroff(guest, "journal-repair", [img], "rescue.fsck=repair rescue.undo=none")
    assert "/dev/vda" in log.split("rescue-fsck repair: summary")[1]
    r = host(["e2fsck", "-fn", img])
    assert r.returncode == 0, r.stdout
    assert "needs_recovery" not in host(["dumpe2fs", "-h", img]).stdout
    for i in range(1, 6):
        assert cat(img, f"/f{i}") == expected, f"/f{i} lost in the replay"

