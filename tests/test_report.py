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
    assert doc["machine"]["id"] == "52:54:00:12:34:56"
    assert doc["disks"] == [{"name": "vda", "size_bytes": 1048576, "model": "disk\x1b[2J", "partition": False,
                             "read_only": False, "health": None, "reallocated_sectors": None,
                             "pending_sectors": None, "media_errors": None, "io_errors": None}]
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


def metrics_root(root):
    """A machine with a failing disk, a damaged volume and hostile names."""
    write(root, "/etc/os-release", 'NAME=extrescue\nVERSION_ID=1.2-3\n')
    write(root, "/proc/uptime", "42.17 80.00\n")
    write(root, "/proc/cmdline", "console=ttyS0 BOOTIF=01-52-54-00-AB-CD-EF ip=dhcp\n")
    write(root, "/sys/class/dmi/id/product_serial", "To Be Filled By O.E.M.\n")
    write(root, "/sys/class/dmi/id/sys_vendor", 'Evil "Corp"\\\n')
    for disk in ("sda", "nvme0n1"):
        write(root, f"/sys/class/block/{disk}/size", "2048\n")
        write(root, f"/sys/class/block/{disk}/device/model", "disk\x1b[2J\n")
    write(root, "/sys/class/block/sda1/size", "1024\n")
    write(root, "/sys/class/block/sda1/partition", "1\n")
    write(root, "/run/extrescue/report/health", "sda\tpassed\t3\t8\t-\t12\nnvme0n1\tfailed\t-\t-\t5\t0\n"
                                                "gone\tpassed\t0\t0\t-\t0\n")
    write(root, "/run/extrescue/fsck.results",
          "check\t/dev/sda1\t4\t3\t-\terrors left\n"
          "check\t/dev/\xff\"x\\\t0\t1\t-\tclean\n"
          "check\t/dev/nvme0n1\t-\t0\t-\tskipped\n"
          "check\t/dev/sda1\t1\t2\t/run/u\tcorrected\n".encode("latin-1"))
    write(root, "/run/extrescue/errors", "one\ntwo")


def samples(text):
    """{(name, frozenset of label pairs): value} of a text exposition."""
    import re
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        m = re.match(r'^(\w+)(?:\{(.*)\})? (\S+)$', line)
        assert m, line
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        key = (m.group(1), labels)
        assert key not in out, f"a series twice: {line}"
        out[key] = float(m.group(3))
    return out


def test_metrics_follow_prometheus_conventions(report, tmp_path):
    """--metrics: promtool's parser and linter take it; each family whole,
    each series once (the last record of a device counts), hostile names
    escaped, health only where the disk answered."""
    metrics_root(tmp_path)
    r = host([*report, "--metrics", "--root", str(tmp_path)])
    assert r.returncode == 0 and not r.stderr, r.stderr
    lint = host(["promtool", "check", "metrics"], input=r.stdout)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    m = samples(r.stdout)
    L = lambda **kw: frozenset(kw.items())  # noqa: E731
    build = [(dict(k[1]), v) for k, v in m.items() if k[0] == "extrescue_build_info"]
    assert len(build) == 1 and build[0][0]["version"] == "1.2-3" and build[0][1] == 1, build
    info = [dict(k[1]) for k in m if k[0] == "extrescue_machine_info"]
    assert info == [{"id": "52:54:00:ab:cd:ef", "vendor": 'Evil \\"Corp\\"\\\\', "product": "",
                     "serial": "To Be Filled By O.E.M."}], info
    assert m[("extrescue_boot_duration_seconds", L())] == 42.17
    assert m[("extrescue_boot_errors", L())] == 2
    sda1 = L(device="/dev/sda1", mode="check")
    assert m[("extrescue_fsck_exit_status", sda1)] == 1 and m[("extrescue_fsck_errors_corrected", sda1)] == 1
    assert m[("extrescue_fsck_errors_uncorrected", sda1)] == 0 and m[("extrescue_fsck_undo_kept", sda1)] == 1
    hostile = L(device='/dev/?\\"x\\\\', mode="check")
    assert m[("extrescue_fsck_exit_status", hostile)] == 0 and m[("extrescue_fsck_completed", hostile)] == 1
    skipped = L(device="/dev/nvme0n1", mode="check")
    assert ("extrescue_fsck_exit_status", skipped) not in m and m[("extrescue_fsck_completed", skipped)] == 0
    assert m[("extrescue_disk_health_ok", L(disk="sda"))] == 1 and m[("extrescue_disk_health_ok", L(disk="nvme0n1"))] == 0
    assert m[("extrescue_disk_reallocated_sectors", L(disk="sda"))] == 3
    assert m[("extrescue_disk_pending_sectors", L(disk="sda"))] == 8
    assert ("extrescue_disk_pending_sectors", L(disk="nvme0n1")) not in m
    assert m[("extrescue_disk_media_errors", L(disk="nvme0n1"))] == 5
    assert m[("extrescue_disk_io_errors_total", L(disk="sda"))] == 12
    assert not [k for k in m if dict(k[1]).get("disk") in ("sda1", "gone")], "a partition or a gone disk"
    assert "\x1b" not in r.stdout and "\xff" not in r.stdout
    # The JSON report carries the same health.
    doc = json.loads(host([*report, "--root", str(tmp_path)]).stdout)
    sda = [d for d in doc["disks"] if d["name"] == "sda"][0]
    assert (sda["health"], sda["reallocated_sectors"], sda["pending_sectors"], sda["media_errors"],
            sda["io_errors"]) == ("passed", 3, 8, None, 12)
    assert "health" not in [d for d in doc["disks"] if d["name"] == "sda1"][0]


@pytest.mark.parametrize("serial,expected", [
    ("CZ1234567X", "CZ1234567X"),
    ("  ABC-9.1:2  ", "ABC-9.1:2"),
    ("0000000000", "52:54:00:00:00:02"),
    ("Not Specified", "52:54:00:00:00:02"),
    ("default string", "52:54:00:00:00:02"),
    ("a/b c\x1b$(x)", "a_b_c___x_"),
    (None, "52:54:00:00:00:02"),
])
def test_machine_id(report, tmp_path, serial, expected):
    """The fleet's name for a machine: its serial unless firmware left a
    default value, else the first NIC's MAC; safe as a label, a syslog
    HOSTNAME and a file name."""
    if serial is not None:
        write(tmp_path, "/sys/class/dmi/id/product_serial", serial + "\n")
    write(tmp_path, "/sys/class/net/lo/address", "00:00:00:00:00:00\n")
    write(tmp_path, "/sys/class/net/eth1/address", "52:54:00:00:00:02\n")
    write(tmp_path, "/sys/class/net/wlan0/address", "52:54:00:00:00:03\n")
    r = host([*report, "--machine-id", "--root", str(tmp_path)])
    assert r.returncode == 0 and r.stdout == expected + "\n", r.stdout


def test_machine_id_without_serial_or_nic(report, tmp_path):
    write(tmp_path, "/proc/sys/kernel/hostname", "(none)\n")
    assert host([*report, "--machine-id", "--root", str(tmp_path)]).stdout == "_none_\n"


def test_many_block_devices_keep_every_disk(report, tmp_path):
    """A machine with hundreds of partitions, loop and dm devices (sorted
    before its disks): its whole disks still reach the report and the metrics."""
    for i in range(300):
        write(tmp_path, f"/sys/class/block/aaa{i:03d}/partition", "1\n")
        write(tmp_path, f"/sys/class/block/aaa{i:03d}/size", "8\n")
    write(tmp_path, "/sys/class/block/zzz/device/model", "last\n")
    write(tmp_path, "/sys/class/block/zzz/size", "8\n")
    doc = json.loads(host([*report, "--root", str(tmp_path)]).stdout)
    assert len(doc["disks"]) == 64 and doc["disks"][-1]["name"] == "aaa063", doc["disks"][-1]
    metrics = host([*report, "--metrics", "--root", str(tmp_path)]).stdout
    assert 'extrescue_disk_info{disk="zzz",model="last"} 1' in metrics, metrics[-500:]
