"""tests/logwrites.py on logs QEMU's own blklogwrites wrote (qemu-io
through it: writes, a FUA write, flushes): the entries in order, each flush
point holding exactly the writes before it, the replay onto a disk split
in two files equal to the disk QEMU wrote, and what a lost cache may keep."""
import os
import random
import subprocess

import pytest

from harness import TOP
from logwrites import FLUSH, FUA, Disk, Entry, Log, lost_in_cache

pytestmark = pytest.mark.beside_serial

KIB = 1024
MIB = 1024 * KIB
# (qemu-io command, the bytes it leaves): four writes, one FUA, two flushes.
COMMANDS = ["write -P 0xaa 0 4k", "flush", "write -P 0xbb 1M 8k", "write -f -P 0xcc 4k 4k", "flush",
            "write -P 0xdd 3M 4k"]


def logged(tmp_path):
    """A 4 MiB disk written by COMMANDS through blklogwrites; (disk, log)."""
    disk, log = tmp_path / "disk.img", tmp_path / "writes.log"
    subprocess.run(["truncate", "-s", "4M", str(disk)], check=True)
    log.write_bytes(b"")
    opts = (f"driver=raw,file.driver=blklogwrites,file.file.driver=file,file.file.filename={disk},"
            f"file.log.driver=file,file.log.filename={log}")
    args = ["qemu-io", "--image-opts", opts]
    for c in COMMANDS:
        args += ["-c", c]
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 0 and "error" not in r.stdout.lower(), r.stdout + r.stderr
    return disk, log


def test_the_entries_are_the_writes_and_flushes_in_order(tmp_path):
    _, path = logged(tmp_path)
    log = Log(str(path))
    writes = [(e.sector * log.sector_size, e.count * log.sector_size) for e in log.entries if e.count]
    assert writes == [(0, 4 * KIB), (1 * MIB, 8 * KIB), (4 * KIB, 4 * KIB), (3 * MIB, 4 * KIB)], log.entries
    # Over a file, QEMU's block layer makes a FUA write the write and a flush after it.
    (fua,) = [e for e in log.entries if e.count and e.sector * log.sector_size == 4 * KIB]
    assert log.entries[fua.index + 1].flags & FLUSH or fua.flags & FUA, log.entries
    flushes = log.flushes()
    # The two asked for, the FUA's, and QEMU's own when it closes the disk.
    assert len(flushes) >= 3 and flushes[0] == 1, log.entries
    assert log.data(log.entries[0]) == b"\xaa" * 4 * KIB


def test_a_replay_onto_two_files_is_the_disk_and_a_flush_point_holds_what_came_before(tmp_path):
    disk, path = logged(tmp_path)
    log = Log(str(path))
    low, high = tmp_path / "low.img", tmp_path / "high.img"
    for f in (low, high):
        f.write_bytes(bytes(2 * MIB))
    # Split in the middle of nothing written: 2 MiB each.
    replay = Disk(log, [(0, 2 * MIB, str(low)), (2 * MIB, 2 * MIB, str(high))])
    first_flush = log.flushes()[0]
    replay.apply(log.entries[:first_flush])
    now = low.read_bytes()
    assert now[:4 * KIB] == b"\xaa" * 4 * KIB and now[1 * MIB:1 * MIB + 8 * KIB] == bytes(8 * KIB)
    replay.apply(log.entries[first_flush:])
    assert low.read_bytes() + high.read_bytes() == disk.read_bytes()
    assert replay.touches(log.entries[-1] if log.entries[-1].count else log.entries[-2], 1)


def test_a_write_across_two_ranges_is_split_and_one_outside_them_refused(tmp_path):
    _, path = logged(tmp_path)
    log = Log(str(path))
    a, b = tmp_path / "a.img", tmp_path / "b.img"
    a.write_bytes(bytes(MIB + 4 * KIB))
    b.write_bytes(bytes(MIB))
    # 1 MiB + 4 KiB | the rest: the 8 KiB write at 1 MiB falls on both.
    Disk(log, [(0, MIB + 4 * KIB, str(a)), (MIB + 4 * KIB, MIB, str(b))]).apply(log.entries[:3])
    assert a.read_bytes()[MIB:] == b"\xbb" * 4 * KIB and b.read_bytes()[:4 * KIB] == b"\xbb" * 4 * KIB
    with pytest.raises(ValueError, match="outside every replayed range"):
        Disk(log, [(0, 2 * MIB, str(a))]).apply(log.entries)


def test_a_file_that_is_no_write_log_is_refused(tmp_path):
    bad = tmp_path / "noise.log"
    bad.write_bytes(random.Random(1).randbytes(4096))
    with pytest.raises(ValueError, match="no dm-log-writes log"):
        Log(str(bad))


def test_a_lost_cache_keeps_fua_writes_and_nothing_after_the_cut():
    entries = [Entry(i, i * 8, 8, FUA if i % 3 == 0 else 0, 0) for i in range(30)]
    rnd = random.Random(7)
    seen_partial = False
    for _ in range(200):
        kept, cut = lost_in_cache(entries, rnd)
        assert all(e.index < cut for e in kept)
        assert {e.index for e in entries[:cut] if e.flags & FUA} <= {e.index for e in kept}
        assert [e.index for e in kept] == sorted(e.index for e in kept)
        seen_partial |= 0 < len(kept) < cut
    assert seen_partial, "no sample lost a write before its cut"


def test_qemu_run_makes_a_write_log_only_of_a_new_or_log_file(tmp_path):
    """The log is made new: a disk image, a symlink or a read-only disk named
    for it is refused before anything is written; --dry-run writes nothing."""
    img = tmp_path / "disk.img"
    img.write_bytes(b"\x01" * 4096)
    (tmp_path / "link.log").symlink_to(img)
    run = [os.path.join(TOP, "qemu", "run"), "--dry-run", "--direct"]
    for spec, said in ((f"{img},rw,logwrites={img}", "holds data that is no write log"),
                       (f"{img},rw,logwrites={tmp_path / 'link.log'}", "is no regular file"),
                       (f"{img},logwrites={tmp_path / 'new.log'}", "it needs rw"),
                       (f"{img},rw,cache=unsafe,logwrites={tmp_path / 'new.log'}", "cache=unsafe")):
        r = subprocess.run(run + ["--disk", spec], capture_output=True, text=True)
        assert r.returncode == 2 and said in r.stderr, (spec, r.stderr)
    assert img.read_bytes() == b"\x01" * 4096
    r = subprocess.run(run + ["--disk", f"{img},rw,logwrites={tmp_path / 'new.log'}"], capture_output=True, text=True)
    assert r.returncode == 0 and "file.driver=blklogwrites" in r.stdout, r.stderr
    assert not (tmp_path / "new.log").exists(), "--dry-run made the log"
