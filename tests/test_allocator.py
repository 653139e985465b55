"""The allocator e2fsprogs is linked with hands out blocks aligned as asked:
libext2fs reads and writes O_DIRECT through them, and a disk refuses a
misaligned buffer (mimalloc 2.0.9's 512-byte alignment of 1 KiB blocks broke
e2fsck on MMP volumes; package/mimalloc/patches/0001)."""
import os

from harness import OUT, make_and_run


def test_aligned_blocks_are_aligned():
    r = make_and_run(os.path.join(OUT, "build", "src", "test-aligned-alloc"))
    assert r.returncode == 0 and " 0 misaligned" in r.stdout, r.stdout + r.stderr
