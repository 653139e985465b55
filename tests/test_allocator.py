"""The allocator e2fsprogs is linked with hands out blocks aligned as asked:
libext2fs reads and writes O_DIRECT through them, and a disk refuses a
misaligned buffer (mimalloc 2.0.9's 512-byte alignment of 1 KiB blocks broke
e2fsck on MMP volumes; mimalloc-patches/0001)."""
import os

from harness import OUT, TOP, host


def test_aligned_blocks_are_aligned():
    binary = os.path.join(OUT, "build", "src", "test-aligned-alloc")
    r = host(["make", "--no-print-directory", "-C", TOP, binary])
    assert r.returncode == 0, r.stderr
    r = host([binary])
    assert r.returncode == 0 and " 0 misaligned" in r.stdout, r.stdout + r.stderr
