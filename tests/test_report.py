"""The report's JSON (the host build with ASan/UBSan, and the image's arm64
build, against a made-up /proc, /sys and /run): valid whatever the strings
hold, key material removed from the command line, the fsck records and
their undo commands as documented."""
import json

import pytest

from harness import SRC_BUILDS, host, src_program

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEkFJ7nK3Z4z9Dd3Jqj8kzYdgCZ/4o3panB55BX3DZlj admin@x"


@pytest.fixture(scope="module", params=SRC_BUILDS)
def report(request):
    return src_program("report", request.param)


def write(root, path, text):
    full = root / path.lstrip("/")
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_bytes(text if isinstance(text, bytes) else text.encode())


def test_report_is_valid_json_without_key_material(report, tmp_path):
    root = tmp_path
    write(root, "/etc/os-release", 'NAME=extrescue\nVERSION_ID=1.2-3\n')
    write(root, "/proc/cmdline", f'console=ttyS0 "rescue.ssh_key={KEY}" rescue.keyfile=LABEL=k:/key '
                                 f'luks.pass=hunter2 rescue.devices="LABEL=my root"\n')
    write(root, "/proc/sys/kernel/hostname", "web1\n")
    write(root, "/proc/uptime", "42.17 80.00\n")
    write(root, "/sys/class/dmi/id/sys_vendor", 'Evil "Corp"\\\n')
    write(root, "/sys/class/net/eth0/address", "52:54:00:12:34:56\n")
    write(root, "/sys/class/net/lo/address", "00:00:00:00:00:00\n")
    write(root, "/sys/class/block/vda/size", "2048\n")
    write(root, "/sys/class/block/vda/ro", "0\n")
    write(root, "/sys/class/block/vda/device/model", "disk\x1b[2J\n")
    write(root, "/sys/class/block/md0/size", "1024\n")
    write(root, "/sys/class/block/md0/ro", "1\n")
    write(root, "/sys/class/block/md0/md/level", "raid1\n")
    write(root, "/sys/class/block/md0/md/array_state", "readonly\n")
    write(root, "/run/extrescue/report/addresses", "eth0 10.0.2.15/24\neth0 fec0::5054:ff:fe12:3456/64\n")
    write(root, "/run/extscan.json", '[\n  {"device": "/dev/vda", "label": "x\\"y"}\n]\n')
    write(root, "/run/extrescue/fsck.results",
          "repair\t/dev/vda\t1\t7\t/run/undo/vda-0.e2undo\terrors corrected\n"
          "repair\t/dev/vdb\t-\t0\t-\tskipped: mounted at /mnt\n"
          "check\t/dev/\xff\"x\t4\t1\t-\terrors found\n".encode("latin-1"))
    write(root, "/run/extrescue/ssh/fingerprints", "ED25519 SHA256:abc\nECDSA SHA256:def\n")
    write(root, "/run/extrescue/errors", b"ip=1.2.3.4 has no valid netmask\n\x07bell\n")
    r = host([*report, "--root", str(root)])
    assert r.returncode == 0 and not r.stderr, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == 1 and doc["extrescue"] == "1.2-3" and doc["uptime_seconds"] == 42
    # uname's machine: under qemu-aarch64 the arm64 build's is the emulated one.
    assert doc["architecture"] == ("aarch64" if report[0].endswith("qemu-aarch64") else "x86_64")
    assert doc["machine"]["vendor"] == 'Evil "Corp"\\'
    assert doc["machine"]["interfaces"] == [
        {"name": "eth0", "mac": "52:54:00:12:34:56", "addresses": ["10.0.2.15/24", "fec0::5054:ff:fe12:3456/64"]}]
    assert doc["cmdline"] == ('console=ttyS0 rescue.ssh_key=<removed> rescue.keyfile=LABEL=k:/key '
                              'luks.pass=<removed> rescue.devices="LABEL=my root"')
    assert "AAAAC3" not in r.stdout and "hunter2" not in r.stdout
    assert doc["disks"] == [{"name": "vda", "size_bytes": 1048576, "model": "disk\x1b[2J", "partition": False,
                             "read_only": False}]
    assert doc["assembled"] == [{"name": "md0", "size_bytes": 524288, "kind": "md", "level": "raid1",
                                 "state": "readonly", "read_only": True}]
    assert doc["extscan"] == [{"device": "/dev/vda", "label": 'x"y'}]
    assert doc["fsck"][0] == {"mode": "repair", "device": "/dev/vda", "status": 1, "meaning": "errors corrected",
                              "seconds": 7, "undo_file": "/run/undo/vda-0.e2undo",
                              "undo_command": "e2undo /run/undo/vda-0.e2undo /dev/vda"}
    assert doc["fsck"][1]["status"] is None and doc["fsck"][1]["undo_command"] is None
    assert doc["fsck"][2]["device"] == '/dev/\xff"x'
    assert doc["errors"] == ["ip=1.2.3.4 has no valid netmask", "\x07bell"]
    assert doc["ssh_host_keys"] == ["ED25519 SHA256:abc", "ECDSA SHA256:def"]


def test_report_of_an_empty_system(report, tmp_path):
    r = host([*report, "--root", str(tmp_path)])
    doc = json.loads(r.stdout)
    assert doc["extscan"] is None and doc["fsck"] == [] and doc["machine"]["interfaces"] == []


def test_many_secrets_on_the_command_line(report, tmp_path):
    """Issue 32: each short secret grows when redacted ("key=a" is 5 bytes,
    "key=<removed>" 13); 64 of them overflowed the buffer sized from the
    input. The report must stay whole, bounded and free of the values."""
    values = [f"{c}" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"] + ["", "Q9"]
    words = [f"key={v}" for v in values]
    line = " ".join(["console=ttyS0"] + words[:32] + ["luks.pass=hunter2", "rescue.fsck=check"] + words[32:])
    write(tmp_path, "/proc/cmdline", line + "\n")
    r = host([*report, "--root", str(tmp_path)])
    assert r.returncode == 0 and not r.stderr, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    shown = doc["cmdline"].split(" ")
    assert shown == (["console=ttyS0"] + ["key=<removed>"] * 32 + ["luks.pass=<removed>", "rescue.fsck=check"] +
                     ["key=<removed>"] * 32), shown
    assert "hunter2" not in r.stdout and "Q9" not in r.stdout


def test_secret_names_are_found_in_long_parameter_names(report, tmp_path):
    """A secret's name is looked for in the whole parameter name, not only its first 63 bytes."""
    write(tmp_path, "/proc/cmdline", "x" * 100 + "_key=s3cr3tvalue " + "y" * 5000 + "=1 token=t0k3nvalue\n")
    r = host([*report, "--root", str(tmp_path)])
    assert r.returncode == 0 and not r.stderr, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    assert doc["cmdline"].startswith("x" * 100 + "_key=<removed> yyy") and len(doc["cmdline"]) == 4096
    assert "s3cr3tvalue" not in r.stdout and "t0k3nvalue" not in r.stdout


def test_fsck_status_is_a_json_number(report, tmp_path):
    """Found by fuzz-report: a status with leading zeros was copied as it was, and JSON has no 007."""
    write(tmp_path, "/run/extrescue/fsck.results", "repair\t/dev/vda\t007\t1\t-\tok\n"
                                                   "check\t/dev/vdb\t0\t1\t-\tclean\n"
                                                   "check\t/dev/vdc\t" + "9" * 30 + "\t1\t-\tx\n")
    r = host([*report, "--root", str(tmp_path)])
    assert r.returncode == 0 and not r.stderr, r.stderr
    assert [f["status"] for f in json.loads(r.stdout)["fsck"]] == [7, 0, None]
