"""Inputs the fuzzers (make fuzz) found, replayed through the host builds of
the tools (ASan/UBSan) and the image's arm64 builds. report's are in test_report.py."""
import pytest

from harness import SRC_BUILDS, host, src_program


@pytest.fixture(scope="module", params=SRC_BUILDS)
def cmdline(request):
    return src_program("cmdline", request.param)


# fuzz-authkeys: url_check took "http://05..2:\r09404/k/" (strtol skips the
# blanks before a port, and nothing after the host looked at them); on the
# command line a space is what gets through.
@pytest.mark.parametrize("param", ["rescue.report", "rescue.ssh_key"])
def test_no_blank_before_a_port(cmdline, tmp_path, param):
    src = tmp_path / "cmdline"
    src.write_text(f'"{param}=http://10.0.2.2: 8080/keys" rescue.fsck=check\n')
    out = tmp_path / "out"
    r = host([*cmdline, "--dir", str(out), str(src)])
    assert r.returncode == 0 and "ERROR" not in r.stderr, r.stderr
    assert sorted(p.name for p in (out / "param").iterdir()) == ["fsck"]
    assert len(r.stderr.splitlines()) == 1 and f"{param}=http://10.0.2.2: 8080" in r.stderr, r.stderr
