"""The records of an e2undo file (E2UNDO02, as e2fsprogs' undo manager
writes it): for each, the volume's bytes it saves, where their originals
sit in the undo file and the key block that names them. Read to check, from
a trace of a repair, that every write to the volume came after the record
of its original was on stable storage."""
import struct
from typing import NamedTuple

MAGIC = b"E2UNDO02"
KEY_MAGIC = 0xCADECADE


class Record(NamedTuple):
    volume_at: int       # first byte of the volume it saves
    size: int
    undo_at: int         # where its data starts in the undo file
    key_block_at: int    # the key block that names it


def records(path):
    """Every record of the undo file PATH, in file order."""
    with open(path, "rb") as f:
        head = f.read(72)
        if head[:8] != MAGIC:
            raise ValueError(f"{path}: no undo file (magic {head[:8]!r})")
        num_keys, _, key_offset, block_size, fs_block_size = struct.unpack("<QQQII", head[8:40])
        fs_offset = struct.unpack("<Q", head[64:72])[0]
        per_block = block_size // 16 - 1
        found, blk, left = [], key_offset, num_keys        # key_offset: in the file's blocks
        while left:
            f.seek(blk * block_size)
            kb = f.read(block_size)
            if len(kb) < block_size or struct.unpack("<I", kb[:4])[0] != KEY_MAGIC:
                raise ValueError(f"{path}: no key block at block {blk}")
            data = blk + 1
            for i in range(min(left, per_block)):
                fsblk, _, size = struct.unpack("<QII", kb[16 + 16 * i:32 + 16 * i])
                found.append(Record(fsblk * fs_block_size + fs_offset, size, data * block_size, blk * block_size))
                data += (size + block_size - 1) // block_size
            left -= min(left, per_block)
            blk = data
    return found
