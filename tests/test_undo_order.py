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
were written, which is right, and which this check would call wrong. So
the big repair (make test-undo-big) is checked by the rule itself, block by
block: the record of each block's original, found through the undo file's
keys, written and synced before the block."""
import bisect
import os
import re

import pytest

from disks import make_fs, sha256_file, tree
from harness import OUT, host
from test_undo_powercut import BLOCK, damaged_original
from test_undo_replay import all_inode_tables, report
from undo_records import records

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


# pwrite64(FD<PATH>, "..."..., COUNT, OFFSET) = COUNT; write(FD<PATH>, "...", COUNT) = COUNT
# at the offset of the last lseek(FD<PATH>, OFFSET, SEEK_SET) = OFFSET (a byte write).
PWRITE = re.compile(r", (\d+), (\d+)\) = (\d+)$")
WRITE = re.compile(r", (\d+)\) = (\d+)$")
LSEEK = re.compile(r", (\d+), SEEK_SET\) = (\d+)$")


@pytest.mark.undo_big
def test_a_repair_that_fills_the_held_batch_writes_no_block_before_its_record_is_durable(tmp_path):
    """The big repair of test_undo_replay (some 1,500 blocks rewritten, the
    held writes let out in the middle of pass 1), block by block: each write
    to the volume comes after a syncfs and an fsync of the undo file that
    followed both the write of the original it replaces (found through the
    undo file's own keys) and the first write of the key block naming it
    after that."""
    img = damaged_original(tmp_path, "all inode tables", all_inode_tables)
    undo = str(tmp_path / "repair.e2undo")
    trace = str(tmp_path / "trace")
    r = host(["strace", "-f", "-y", "-o", trace, "-e",
              "trace=" + ",".join(sorted(WRITES | {"fsync", "fdatasync", "syncfs", "lseek"})),
              os.path.join(E2FS, "e2fsck"), "-fy", "-z", undo, img])
    assert r.returncode == 1, f"e2fsck -fy -z exited {r.returncode}: {r.stdout[-1500:]}{r.stderr[-1500:]}"
    saved = records(undo)
    events = []          # (call, path is the undo file, offset, count) in trace order
    at = {}              # a file's offset after its last lseek
    with open(trace) as f:
        for line in f:
            m = CALL.match(line)
            if not m or os.path.realpath(m.group(3)) not in (os.path.realpath(undo), os.path.realpath(img)):
                continue
            on_undo, call, line = os.path.realpath(m.group(3)) == os.path.realpath(undo), m.group(1), line.strip()
            if call == "lseek":
                s = LSEEK.search(line)
                at[on_undo] = int(s.group(2)) if s else None
            elif call == "pwrite64" and PWRITE.search(line):
                w = PWRITE.search(line)
                events.append(("write", on_undo, int(w.group(2)), int(w.group(3))))
            elif call == "write" and WRITE.search(line) and at.get(on_undo) is not None:
                n = int(WRITE.search(line).group(2))
                events.append(("write", on_undo, at[on_undo], n))
                at[on_undo] += n
            elif call in WRITES:
                raise AssertionError(f"a write this check cannot place: {line}")
            else:
                events.append((call, on_undo, None, None))
    checked, batches, wrong = order_of(events, saved)
    assert not wrong, wrong[0]
    report(f"the big repair traced: {checked} block writes to the volume checked against {len(saved)} records "
           f"({sum(s.size for s in saved)} bytes), {batches} syncfs+fsync commits of the undo file")
    assert checked > 1024, f"only {checked} block writes: the held batch never filled"
    # The check can fail: the same trace without the undo file's second
    # syncfs (the commit before a batch let out mid-pass) has volume writes
    # before their records are durable.
    syncs = [i for i, e in enumerate(events) if e[0] == "syncfs" and e[1]]
    assert len(syncs) >= 2, f"{len(syncs)} syncfs of the undo file: no commit before a batch to take out"
    second = syncs[1]
    assert order_of(events[:second] + events[second + 1:], saved)[2], \
        "without a syncfs the trace still looks right: the check cannot fail"


def order_of(events, saved):
    """(block writes checked, commits of the undo file, what was written too
    early) for the EVENTS of a traced repair and the undo file's records."""
    # The events that wrote each block of the undo file, in order.
    writes_of = {}
    for i, (call, on_undo, off, n) in enumerate(events):
        if call == "write" and on_undo:
            for b in range(off - off % BLOCK, off + n, BLOCK):
                writes_of.setdefault(b, []).append(i)

    def first_undo_write(at, after=-1):
        later = writes_of.get(at - at % BLOCK, [])
        k = bisect.bisect_right(later, after)
        return later[k] if k < len(later) else None

    durable = -1         # every undo write before this event is on stable storage
    last_syncfs = -1
    checked = batches = 0
    wrong = []
    for i, (call, on_undo, off, n) in enumerate(events):
        if call == "syncfs" and on_undo:
            last_syncfs = i
        elif call == "fsync" and on_undo and last_syncfs > durable:
            durable, batches = last_syncfs, batches + 1
        elif call == "write" and not on_undo:
            for x in range(off - off % BLOCK, off + n, BLOCK):
                rec = next((s for s in saved if s.volume_at <= x < s.volume_at + s.size), None)
                data = rec and first_undo_write(rec.undo_at + (x - rec.volume_at))
                key = rec and first_undo_write(rec.key_block_at, after=data if data is not None else -1)
                if rec is None or data is None or key is None or max(data, key) >= durable:
                    wrong.append(f"event {i}: the volume's block at byte {x} written before its record was durable "
                                 f"(original written at event {data}, its key block after it at {key}, "
                                 f"durable up to event {durable})")
                checked += 1
    return checked, batches, wrong
