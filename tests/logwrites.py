"""A disk's write log in dm-log-writes' format, as QEMU's blklogwrites
writes it (qemu/run --disk PATH,rw,logwrites=LOG), and its replay.

The log: a superblock in its first sector (magic, version, number of
entries, sector size); then, from the second sector, each entry's header
in a sector of its own (the disk's sector, number of sectors, flags) with
the sectors written right after it. A flush is an entry with the FLUSH
flag and no sectors; a write the guest asked to be durable carries FUA.

A replay rebuilds the disk as a power cut would have left it: every
write before a flush is on the medium; of the later ones any may be
missing (a volatile write cache keeps what it likes, in any order), but
not a FUA write once it completed, and a sector never ends with older
data over newer, since a cache holds a sector's latest data only. The
model is the log's: writes in the order they completed, each kept or
lost whole (a real disk may also tear a write of many sectors)."""
import struct
from typing import NamedTuple

MAGIC = 0x6A736677736872
VERSION = 1
FLUSH, FUA, DISCARD, MARK = 1, 2, 4, 8


class Entry(NamedTuple):
    index: int
    sector: int          # in the log's sectors
    count: int           # sectors written (0: a flush)
    flags: int
    data_at: int         # offset of its data in the log


class Log:
    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            head = f.read(28)
            if len(head) < 28:
                raise ValueError(f"{path}: no write log (shorter than its superblock)")
            magic, version, n, self.sector_size = struct.unpack("<QQQI", head)
            if magic != MAGIC or version != VERSION or self.sector_size not in (512, 4096):
                raise ValueError(f"{path}: no dm-log-writes log (magic {magic:#x}, version {version})")
            size = f.seek(0, 2)
            self.entries = []
            at = self.sector_size
            for i in range(n):
                f.seek(at)
                sector, count, flags, _ = struct.unpack("<QQQQ", f.read(32))
                if flags & (DISCARD | MARK) or flags & ~0x1F:
                    raise ValueError(f"{path}: entry {i} has flags {flags:#x} (a discard, a mark or unknown), "
                                     "which this replay does not model")
                if not count and not flags & FLUSH:
                    raise ValueError(f"{path}: entry {i} writes nothing and is no flush (a torn log?)")
                data_at = at + self.sector_size
                at = data_at + count * self.sector_size
                if at > size:
                    raise ValueError(f"{path}: entry {i} runs past the log's end (a log QEMU did not close?)")
                self.entries.append(Entry(i, sector, count, flags, data_at))
            if at != size:
                raise ValueError(f"{path}: {size - at} bytes after its {n} entries (a log QEMU did not close?)")

    def flushes(self):
        """The indices of the flush entries: the points where everything before is durable."""
        return [e.index for e in self.entries if e.flags & FLUSH]

    def data(self, e):
        with open(self.path, "rb") as f:
            f.seek(e.data_at)
            return f.read(e.count * self.sector_size)


class Disk:
    """Files that hold ranges of the logged disk (its partitions, say):
    [(first byte, length, path)]; a write outside every range is an error
    (it would be lost from the replay)."""

    def __init__(self, log, parts):
        self.log = log
        self.parts = parts

    def apply(self, entries):
        for e in entries:
            if not e.count:
                continue
            data = self.log.data(e)
            at, done = e.sector * self.log.sector_size, 0
            for first, length, path in self.parts:
                lo, hi = max(at, first), min(at + len(data), first + length)
                if lo < hi:
                    with open(path, "r+b") as f:
                        f.seek(lo - first)
                        f.write(data[lo - at:hi - at])
                    done += hi - lo
            if done != len(data):
                raise ValueError(f"entry {e.index} writes {len(data) - done} bytes from sector {e.sector} "
                                 "outside every replayed range")

    def touches(self, e, part):
        first, length, _ = self.parts[part]
        at = e.sector * self.log.sector_size
        return e.count and at < first + length and at + e.count * self.log.sector_size > first


def lost_in_cache(entries, rnd):
    """What a power cut at a random moment among ENTRIES (all after the last
    flush) leaves on the medium: (the writes kept, in log order, and how
    many entries came before the cut). Each write before the cut may be
    missing unless it is FUA; kept in log order, a sector ends with the
    last of its writes that reached the medium, never older data over newer."""
    cut = rnd.randrange(len(entries) + 1)
    return [e for e in entries[:cut] if e.flags & FUA or rnd.random() < 0.5], cut
