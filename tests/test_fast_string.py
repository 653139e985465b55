"""Our word-at-a-time memcmp/strncmp agree with the C library's."""
import os

from harness import OUT, TOP, host


def test_fast_string_matches_libc():
    binary = os.path.join(OUT, "build", "src", "test-fast-string")
    r = host(["make", "--no-print-directory", "-C", TOP, binary])
    assert r.returncode == 0, r.stderr
    r = host([binary])
    assert r.returncode == 0 and "0 mismatches" in r.stdout, r.stdout + r.stderr
