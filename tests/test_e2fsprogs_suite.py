"""e2fsprogs' own test suite, run on the binaries that go into the image."""
import os

import pytest

from harness import OUT, TOP, host

# It runs make in e2fsprogs' own build folder, which the serial test's
# rebuild of mdadm and the image leaves alone (it checks that it does).
pytestmark = pytest.mark.beside_serial


def test_upstream_suite_passes():
    r = host([os.path.join(TOP, "tests", "e2fsprogs-suite"), os.path.join(OUT, "build", "e2fsprogs"),
              os.path.join(TOP, "tests", "e2fsprogs-skips")])
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
