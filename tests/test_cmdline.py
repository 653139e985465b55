"""The kernel command line parser (host build with ASan/UBSan): split as the
kernel splits it, rescue.* values checked and written as data, console=
values listed, warnings one line each, exit 0 whatever the input."""
import os

import pytest

from harness import OUT, TOP, host

CMDLINE = os.path.join(OUT, "build", "src", "host", "cmdline")


@pytest.fixture(scope="module", autouse=True)
def built():
    r = host(["make", "--no-print-directory", "-C", TOP, CMDLINE])
    assert r.returncode == 0, r.stderr


def parse(tmp_path, line):
    src = tmp_path / "cmdline"
    src.write_bytes(line.encode() if isinstance(line, str) else line)
    out = tmp_path / "out"
    r = host([CMDLINE, "--dir", str(out), str(src)])
    assert r.returncode == 0 and "ERROR" not in r.stderr, r.stderr
    params = {p.name: p.read_text() for p in (out / "param").iterdir()}
    consoles = (out / "consoles").read_text().splitlines() if (out / "consoles").exists() else []
    return params, consoles, r.stderr.splitlines()


def test_quotes_group_like_the_kernel(tmp_path):
    params, consoles, warnings = parse(
        tmp_path, 'BOOT_IMAGE=/vmlinuz console=tty0 "console=ttyS1,115200n8" rescue.devices="LABEL=my root" '
                  '"rescue.keyfile=LABEL=key disk:/k e y" rescue.fsck=check\n')
    assert params == {"devices": "LABEL=my root", "keyfile": "LABEL=key disk:/k e y", "fsck": "check"}
    assert consoles == ["tty0", "ttyS1,115200n8"] and not warnings


@pytest.mark.parametrize("arg,warning", [
    ("rescue.fsck=fix", "rescue.fsck=fix is not one of the accepted values; ignored"),
    ("rescue.settle=$(reboot)", "rescue.settle=$(reboot) is not a number in range; ignored"),
    ("rescue.timeout=0", "rescue.timeout=0 is not a number in range; ignored"),
    ("rescue.devices=a,,b", "has an empty device name"),
    ("rescue.keyfile=nocolon", "is not DEVICE:PATH"),
    ("rescue.bogus=1", "rescue.bogus is not a parameter extrescue knows"),
    ("rescue.after", "rescue.after has no value"),
    ("rescue.undo=" + "u" * 2000, "is longer than 1024 characters"),
])
def test_bad_values_are_named_and_ignored(tmp_path, arg, warning):
    params, _, warnings = parse(tmp_path, f"console=ttyS0 {arg} rescue.fsck=check")
    assert params == {"fsck": "check"}, params
    assert len(warnings) == 1 and warning in warnings[0], warnings
    assert len(warnings[0]) < 120


def test_shell_code_is_only_data(tmp_path):
    params, _, warnings = parse(tmp_path, "rescue.undo=it's rescue.devices=a';reboot;',`id` "
                                          "rescue.keyfile=x:$(touch${IFS}/tmp/x)\n")
    assert params == {"undo": "it's", "devices": "a';reboot;',`id`", "keyfile": "x:$(touch${IFS}/tmp/x)"}
    assert not warnings


def test_garbage_and_truncation(tmp_path):
    params, _, warnings = parse(tmp_path, b"rescue.fsck=check\x01 rescue.settle=5 \xff\xfe " + b"x" * 20000)
    assert params == {"settle": "5"}, params
    assert any("holds control characters" in w for w in warnings), warnings
