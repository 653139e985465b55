"""Our word-at-a-time memcmp/strncmp agree with the C library's."""
import os

from harness import OUT, make_and_run


def test_fast_string_matches_libc():
    r = make_and_run(os.path.join(OUT, "build", "src", "test-fast-string"))
    assert r.returncode == 0 and "0 mismatches" in r.stdout, r.stdout + r.stderr
