"""The order of an undo-file repair, as the kernel sees it: the image's
e2fsck -z on a damaged volume, its calls traced with strace. No write
reaches the volume before the undo records that save it are on stable
storage, with the metadata that makes them findable: the undo file
fsynced, its file system synced (syncfs: vfat's fsync can leave the
directory entry that holds the file's size in a dirty buffer; see
package/e2fsprogs/patches/0007), and fsynced again to flush the disk's
cache after it. A power cut between them is what test_undo_powercut
makes; this checks the order on every write, not only where a cut falls.

The check is stricter than the rule: it asks that nothing at all was
written to the undo file since its last sync when the volume is written.
That holds here because on a volume this small the held writes are let
out only where the undo manager also flushes the volume (its flush and
close); on a large one the writes let out when the held ones fill up can
sit in unix_io's small cache and reach the volume after later records
were written, which is right, and which this check would call wrong."""
import os
import re

from disks import make_fs, sha256_file, tree
from harness import OUT, host

E2FS = os.path.join(OUT, "build", "e2fsprogs-root", "sbin")
# fallocate: zeroing and discarding ranges write the volume too.
WRITES = {"write", "pwrite64", "pwritev", "pwritev2", "fallocate"}
# strace -y: NAME(FD<PATH>, ...
CALL = re.compile(r"^\d+\s+(\w+)\((\d+)<([^>]*)>")


def damaged(tmp_path):
    """A small ext4 volume whose bitmaps are zeroed and root directory's
    first block is noise: every pass of e2fsck writes."""
    src = tmp_path / "tree"
    src.mkdir()
    tree(str(src), files=200)
    img = str(tmp_path / "volume.img")
    make_fs(img, "32M", options=["-b", "4096"], populate=str(src))
    out = host(["dumpe2fs", img]).stdout
    root = int(host(["debugfs", "-R", "bmap / 0", img]).stdout)
    with open(img, "r+b") as f:
        for what in ("Block bitmap", "Inode bitmap"):
            f.seek(int(re.search(rf"{what} at (\d+)", out).group(1)) * 4096)
            f.write(bytes(4096))
        f.seek(root * 4096)
        f.write(os.urandom(4096))
    assert host(["e2fsck", "-fn", img]).returncode & 4, "the damage is not there"
    return img


def where(index):
    return f"line {index + 1}" if index >= 0 else "none"


def test_no_volume_write_before_its_undo_records_and_their_size_are_durable(tmp_path):
    img = damaged(tmp_path)
    before = sha256_file(img)
    undo = str(tmp_path / "repair.e2undo")
    trace = str(tmp_path / "trace")
    r = host(["strace", "-f", "-y", "-o", trace, "-e", "trace=" + ",".join(sorted(WRITES | {"fsync", "fdatasync", "syncfs"})),
              os.path.join(E2FS, "e2fsck"), "-fy", "-z", undo, img])
    assert r.returncode in (1, 2), f"e2fsck -fy -z exited {r.returncode}: {r.stdout[-1500:]}{r.stderr[-1500:]}"
    # Per call on the undo file: the index of its last write, of the last
    # syncfs after that, and of the last fsync after that syncfs.
    last_write = synced_fs = flushed = -1
    volume_writes = 0
    with open(trace) as f:
        for i, line in enumerate(f):
            m = CALL.match(line)
            if not m:
                continue
            call, path = m.group(1), os.path.realpath(m.group(3))
            if path == os.path.realpath(undo):
                if call in WRITES:
                    last_write = i
                elif call == "syncfs" and last_write >= 0:
                    synced_fs = i
                elif call == "fsync" and synced_fs > last_write:
                    flushed = i
            elif path == os.path.realpath(img) and call in WRITES:
                volume_writes += 1
                assert last_write >= 0, f"trace line {i + 1}: the volume was written before any undo record: {line}"
                assert last_write < synced_fs < flushed, \
                    f"trace line {i + 1}: the volume written while the undo file's last write (line {last_write + 1}) " \
                    f"was not yet followed by syncfs and fsync (last syncfs: {where(synced_fs)}, last fsync after " \
                    f"it: {where(flushed)}): {line.strip()}"
    assert volume_writes >= 4, f"the repair wrote {volume_writes} times to the volume: the trace shows nothing"
    # The undo file gives the volume back (the order is worth nothing otherwise).
    assert sha256_file(img) != before, "the repair changed nothing"
    r = host([os.path.join(E2FS, "e2undo"), undo, img])
    assert r.returncode == 0, r.stdout + r.stderr
    assert sha256_file(img) == before, "e2undo did not give the volume back as it was"
