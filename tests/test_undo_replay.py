"""The way back under a real power cut, as the disk sees it: an unattended
repair with its undo files on a second partition of the same disk (ext4 or
FAT), every write, flush and FUA of that disk recorded by QEMU's
blklogwrites (one log orders the writes of both), then replayed on the
host. At every flush point, and at sampled moments between two (the writes
since the flush partly lost, as a volatile write cache may lose them), the
volume is untouched or the image's e2undo, with the undo files the undo
partition holds there (its journal replayed, or its FAT read), gives the
damaged original back byte for byte outside the fields e2undo marks.

A big repair (noise over every inode table block holding files: pass 1
clears some 23,000 inodes, pass 2 their names) fills the undo manager's
held batch (1024 writes or 8 MiB) more than once, so that its batches go
out in the middle of a pass; it is replayed the same way in
make test-undo-big, which CI runs.

The replay can fail: the same log with no flush between a batch of the
volume's writes and the undo records written for it (what an fsync that
flushed nothing would leave), those records lost and the batch kept,
loses the way back."""
import os
import random
import re
import struct
import subprocess

import pexpect
import pytest

from harness import OUT, host, scaled
from logwrites import FLUSH, Disk, Log, lost_in_cache
from test_undo_powercut import BLOCK, EAGER, SHAPES, copy, damaged_original, outcome, undo_disk

MIB = 1 << 20
VOLUME = (MIB, 256 * MIB)           # (first byte, length) of the two partitions
UNDO = (MIB + 256 * MIB, 96 * MIB)
SAMPLES = 12                        # moments between flushes, per undo file system
# The figures of each run, printed at the end of make test-undo-big.
FIGURES = os.path.join(OUT, "undo-replay.txt")


def report(line):
    print(line)
    with open(FIGURES, "a") as f:
        f.write(line + "\n")


def all_inode_tables(img):
    """Noise over both groups' inode tables from group 0's fifth block:
    every file's inode, some 1,500 blocks the repair rewrites."""
    out = host(["dumpe2fs", img]).stdout
    rnd = random.Random(1024)
    with open(img, "r+b") as f:
        for k, first in enumerate(int(b) for b in re.findall(r"Inode table at (\d+)", out)):
            start = first + (4 if k == 0 else 0)
            f.seek(start * BLOCK)
            f.write(rnd.randbytes(int(re.search(r"Inode blocks per group:\s+(\d+)", out).group(1))
                                  * BLOCK - (4 * BLOCK if k == 0 else 0)))


SHAPES_HERE = {"inode tables": SHAPES["inode tables"], "all inode tables": all_inode_tables}


def disk_of(volume, undo, path):
    """An MBR disk with VOLUME and UNDO as its two partitions (type 0x83,
    addressed by LBA only: CHS fields left at their 'too big' value)."""
    subprocess.run(["truncate", "-s", str(UNDO[0] + UNDO[1] + MIB), path], check=True)
    table = b"".join(struct.pack("<B3sB3sII", 0, b"\xff\xff\xff", 0x83, b"\xff\xff\xff", first // 512, length // 512)
                     for first, length in (VOLUME, UNDO))
    with open(path, "r+b") as f:
        f.seek(446)
        f.write(table + bytes(32) + b"\x55\xaa")
    for img, (first, _) in ((volume, VOLUME), (undo, UNDO)):
        subprocess.run(["dd", f"if={img}", f"of={path}", "bs=1M", f"seek={first // MIB}", "conv=notrunc,sparse",
                        "status=none"], check=True)


def logged_repair(guest, name, disk, log):
    """The unattended repair of the disk's first partition, undo files on
    its second; the disk's writes logged to LOG. Writeback as eager as on
    a busy machine, so that the held writes let out in the middle of a pass
    reach the disk there, not all at the end."""
    params = (f"console=ttyS0,115200n8 {EAGER} rescue.fsck=repair rescue.devices=vda1 rescue.undo=LABEL=XRUNDO "
              "rescue.after=poweroff")
    g = guest(name, ["--direct", "--mem", "512", "--append", params,
                     "--disk", f"{disk},if=virtio-blk,rw,logwrites={log}"], boot_timeout=300)
    g.expect([pexpect.EOF], scaled(300), "the repair to power off")
    said = g.serial_log()
    assert "errors corrected" in said.split("rescue-fsck repair: summary")[-1], said[-3000:]


def on_volume(e, log):
    """Whether entry E of LOG writes the volume's partition."""
    return e.count and VOLUME[0] <= e.sector * log.sector_size < VOLUME[0] + VOLUME[1]


def volume_bytes(log):
    return sum(e.count * log.sector_size for e in log.entries if on_volume(e, log))


def runs(log):
    """(first, last) entry of each run of writes to the volume with no flush
    among them (any flush: the undo disk's journal commits split them too),
    as the held writes reach the disk."""
    found, start, last = [], None, None
    for e in log.entries:
        if e.flags & FLUSH:
            if start is not None:
                found.append((start, last))
            start = None
        elif on_volume(e, log):
            start, last = (e.index if start is None else start), e.index
    return found + ([(start, last)] if start is not None else [])


class Replay:
    """The medium as the log leaves it: the two partitions as files, from
    the original ones, written forward entry by entry."""

    def __init__(self, tmp_path, log, original, undo_blank, undo_fs):
        self.tmp, self.log, self.original, self.undo_fs = tmp_path, log, original, undo_fs
        self.volume, self.undo = str(tmp_path / "replay-volume.img"), str(tmp_path / "replay-undo.img")
        copy(original, self.volume)
        copy(undo_blank, self.undo)
        self.disk = Disk(log, [(*VOLUME, self.volume), (*UNDO, self.undo)])
        self.done = 0
        self.volume_written = False

    def forward(self, to):
        """Applies the entries before index TO."""
        pending = self.log.entries[self.done:to]
        self.disk.apply(pending)
        self.volume_written = self.volume_written or any(self.disk.touches(e, 0) for e in pending)
        self.done = to

    def judge(self, volume=None, undo=None):
        """outcome() of the current medium (or of the VOLUME and UNDO files given)."""
        if volume is None and not self.volume_written:
            return "untouched"
        return outcome(self.tmp, volume or self.volume, self.original, undo or self.undo, self.undo_fs)[0]

    def with_lost(self, entries, keep):
        """The current medium with only KEEP of ENTRIES (those since the last
        flush) applied, judged on copies."""
        vol, und = str(self.tmp / "lost-volume.img"), str(self.tmp / "lost-undo.img")
        copy(self.volume, vol)
        copy(self.undo, und)
        Disk(self.log, [(*VOLUME, vol), (*UNDO, und)]).apply(keep)
        written = self.volume_written or any(self.disk.touches(e, 0) for e in keep)
        return self.judge(vol, und) if written else "untouched"


@pytest.mark.parametrize("shape,undo_fs", [
    ("inode tables", "ext4"), ("inode tables", "vfat"),
    pytest.param("all inode tables", "ext4", marks=pytest.mark.undo_big),
    pytest.param("all inode tables", "vfat", marks=pytest.mark.undo_big)])
def test_every_flush_point_of_a_logged_repair_keeps_the_way_back(guest, tmp_path, shape, undo_fs):
    original = damaged_original(tmp_path, shape, SHAPES_HERE[shape])
    undo_blank = str(tmp_path / "undo-blank.img")
    undo_disk(undo_blank, undo_fs)
    disk, log_path = str(tmp_path / "disk.img"), str(tmp_path / "writes.log")
    disk_of(original, undo_blank, disk)
    logged_repair(guest, f"replay-{shape.replace(' ', '-')}-{undo_fs}", disk, log_path)
    log = Log(log_path)
    flushes = log.flushes()
    volume_writes = [e.index for e in log.entries if on_volume(e, log)]
    assert flushes and volume_writes, f"{len(flushes)} flushes, {len(volume_writes)} writes to the volume"

    # Every flush point, and the end (the repair done, its QEMU closed).
    rp = Replay(tmp_path, log, original, undo_blank, undo_fs)
    points, rows = flushes + [len(log.entries)], []
    rnd = random.Random(63)
    gaps = [(a, b) for a, b in zip([0] + flushes, points) if b > a + 1]
    sampled = set(rnd.sample(range(len(gaps)), min(SAMPLES, len(gaps))))
    for k, (a, b) in enumerate(zip([0] + flushes, points)):
        rp.forward(a)
        if (a, b) in gaps and gaps.index((a, b)) in sampled:
            since = log.entries[a:b]
            keep, cut = lost_in_cache(since, rnd)
            rows.append((f"{cut} of {len(since)} after flush {a}", len(keep), rp.with_lost(since, keep)))
        rp.forward(b)
        rows.append((f"flush at entry {b}" if b < len(log.entries) else "the end", None, rp.judge()))
    untouched = sum(1 for _, _, what in rows if what == "untouched")
    report(f"{shape}, undo files on {undo_fs}: {len(log.entries)} log entries, {len(flushes)} flushes, "
          f"{len(volume_writes)} writes to the volume ({volume_bytes(log) >> 10} KiB) in {len(runs(log))} runs "
          "between flushes "
          f"(first at entry {volume_writes[0]}); "
          f"{len(rows)} points checked ({len(sampled)} with writes lost since a flush), {untouched} untouched")
    lost = [r for r in rows if r[2].startswith("LOST")]
    for where, kept, what in lost:
        report(f"  {where}{'' if kept is None else f' ({kept} kept)'}: {what}")
    assert not lost, f"{len(lost)} of {len(rows)} points lost the way back"
    assert rows[-1][2].startswith("given back"), rows[-1]

    # The deliberate break, what an fsync that flushed nothing would leave:
    # no flush between a batch of held writes and the undo records written
    # for it since the batch before, so that a cut may keep the batch and
    # lose every one of those records.
    broke, prev = [], 0
    for start, end in runs(log):
        broken = Replay(tmp_path, log, original, undo_blank, undo_fs)
        broken.forward(prev)
        since = [e for e in log.entries[prev:end + 1] if not e.flags & FLUSH]
        keep = [e for e in since if broken.disk.touches(e, 0)]
        broke.append((start, len(since) - len(keep), len(keep), broken.with_lost(since, keep)))
        prev = min([i for i in flushes if i > end] + [len(log.entries)])
    for start, lost_undo, kept, what in broke:
        report(f"  the run at entry {start} with no flush before it: {lost_undo} undo-disk writes lost, "
              f"{kept} volume writes kept: {what}")
    # The first run's break loses the undo file itself, which says little;
    # a later one's loses records of a file that is there.
    assert any(what.startswith("LOST") and "no undo file" not in what for *_, what in broke[1:]), \
        "with no flush before the held writes, the replay still found the way back everywhere"
    if shape == "all inode tables":
        many = [r for r in runs(log) if sum(1 for e in log.entries[r[0]:r[1] + 1] if on_volume(e, log)) > 1]
        assert len(many) >= 2, f"the held writes went out in one run of writes {runs(log)}: no batch mid-pass"
    os.unlink(disk)
