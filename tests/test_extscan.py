"""extscan on crafted images (host build with ASan/UBSan), and in the booted image."""
import json
import os
import subprocess

import pytest

from disks import make_fs, sha256_file
from harness import OUT, TOP, host

EXTSCAN = os.path.join(OUT, "build", "src", "host", "extscan")


@pytest.fixture(scope="module", autouse=True)
def built():
    r = host(["make", "--no-print-directory", "-C", TOP, EXTSCAN])
    assert r.returncode == 0, r.stderr


def scan(*paths):
    r = host([EXTSCAN, "--json"] + [str(p) for p in paths])
    assert r.returncode == 0 and not r.stderr, r.stderr
    return json.loads(r.stdout)


def debugfs(img, *cmds):
    for c in cmds:
        subprocess.run(["debugfs", "-w", "-R", c, str(img)], check=True, capture_output=True)


def image(tmp_path, name, fstype="ext4", options=(), size="16M"):
    img = tmp_path / f"{name}.img"
    make_fs(str(img), size, fstype=fstype, label=name[:16], options=list(options))
    return img


@pytest.mark.parametrize("fstype,options,kind", [
    ("ext2", [], "ext2"), ("ext3", [], "ext3"), ("ext3", ["-O", "extents"], "ext3+extents"),
    ("ext4", [], "ext4"), ("ext4", ["-O", "^has_journal"], "ext4"), ("ext4", ["-O", "journal_dev"], "journal"),
])
def test_kind(tmp_path, fstype, options, kind):
    v = scan(image(tmp_path, "k", fstype, options))[0]
    assert v["kind"] == kind, v
    if kind != "journal":
        assert v["kernel_mount"] == "rw" and v["e2fsck"] == "yes" and v["label"] == "k"


@pytest.mark.parametrize("cmds,state", [
    ((), "clean"),
    (("ssv state 0",), "not clean"),
    (("ssv state 3", "ssv error_count 4"), "errors recorded"),
    (("feature needs_recovery",), "journal needs recovery"),
    (("ssv last_orphan 12",), "orphans present"),
])
def test_state(tmp_path, cmds, state):
    img = image(tmp_path, "s")
    debugfs(img, *cmds)
    assert scan(img)[0]["state"] == state


def test_unknown_features(tmp_path):
    inc = image(tmp_path, "incompat")
    debugfs(inc, "ssv feature_incompat 0x80000242")
    ro = image(tmp_path, "rocompat")
    debugfs(ro, "ssv feature_ro_compat 0x40000001")
    a, b = scan(inc, ro)
    assert a["kernel_mount"] == "no" and a["kernel_blocker"] == "unknown feature 0x80000000 (incompat)", a
    assert a["e2fsck"] == "no"
    assert b["kernel_mount"] == "ro" and b["kernel_blocker"] == "unknown feature 0x40000000 (ro_compat)", b
    out = host([EXTSCAN, str(inc)]).stdout
    assert "cannot mount: unknown feature 0x80000000 (incompat)" in out, out


def test_feature_names_with_v(tmp_path):
    img = image(tmp_path, "v", options=["-O", "inline_data,casefold,project,quota"], size="32M")
    out = host([EXTSCAN, "-v", str(img)]).stdout
    for f in ("inline_data", "casefold", "project", "quota", "metadata_csum", "extent"):
        assert f in out.split("features:")[1], out


def test_bad_input_is_reported_not_fatal(tmp_path):
    tiny = tmp_path / "tiny"
    tiny.write_bytes(b"x" * 100)
    garbage = tmp_path / "garbage"
    data = bytearray(os.urandom(8192))
    data[1024 + 0x38:1024 + 0x3a] = b"\x53\xef"
    data[1024 + 0x18:1024 + 0x1c] = b"\x40\x00\x00\x00"
    garbage.write_bytes(bytes(data))
    # One block group (4 MiB of 4 KiB blocks): no backup to fall back on.
    counts = image(tmp_path, "counts", options=["-b", "4096"], size="4M")
    with open(counts, "r+b") as f:
        f.seek(1024 + 0x10)
        f.write(b"\xff\xff\xff\xff")
    res = scan(tiny, garbage, counts, tmp_path / "missing")
    assert [("error" in v) for v in res] == [True] * 4, res
    assert "no ext2/3/4" in res[0]["error"]
    assert "absurd block size" in res[1]["error"]
    assert "absurd inode or block counts, and no valid backup" in res[2]["error"]
    assert "cannot open" in res[3]["error"]


def test_damaged_primary_uses_backup(tmp_path):
    img = image(tmp_path, "backup", size="64M")
    with open(img, "r+b") as f:
        f.seek(1024)
        f.write(b"\0" * 1024)
    v = scan(img)[0]
    assert v["backup_superblock"] == 8193 and v["label"] == "backup", v
    assert v["state"].startswith("primary superblock damaged (backup at block 8193)"), v
    assert host([EXTSCAN, "--devices", str(img)]).stdout.strip() == f"{img} 8193 1024"


def test_boot_reports_and_writes_nothing(guest, tmp_path):
    """Default boot with volumes in every state: reported, and left byte-identical."""
    clean = image(tmp_path, "clean", size="32M")
    recover = image(tmp_path, "recover", size="32M")
    debugfs(recover, "feature needs_recovery")
    errors = image(tmp_path, "errors", size="32M")
    debugfs(errors, "ssv state 3", "ssv error_count 2")
    future = image(tmp_path, "future", size="32M")
    debugfs(future, "ssv feature_incompat 0x80000242")
    disks = [clean, recover, errors, future]
    before = [sha256_file(d) for d in disks]
    args = ["--direct", "--append", "console=ttyS0,115200n8"]
    for d in disks:
        args += ["--disk", f"{d},if=virtio-blk,rw"]
    g = guest("extscan-boot", args)
    g.wait_shell()
    log = g.serial_log()
    for line in ("clean", "journal needs recovery", "errors recorded"):
        assert line in log, log[-3000:]
    assert "cannot mount: unknown feature 0x80000000 (incompat)" in log
    # The verdict matches what the kernel really does.
    assert g.run("mount -o ro /dev/vdd /mnt")[0] != 0
    assert "unsupported optional features (80000000)" in g.check("dmesg | grep vdd")
    assert g.poweroff() == 0
    g.assert_no_fatal()
    assert [sha256_file(d) for d in disks] == before, "the default boot wrote to a disk"


def test_partitions_mbr_and_gpt(guest, tmp_path):
    """Volumes inside MBR and GPT partitions are found under their partition names."""
    found = {}
    for table, img in (("dos", tmp_path / "mbr.img"), ("gpt", tmp_path / "gpt.img")):
        subprocess.run(["truncate", "-s", "96M", str(img)], check=True)
        # The image's own sfdisk (static) does the partitioning on the host.
        subprocess.run([os.path.join(OUT, "build", "util-linux-root", "sbin", "sfdisk"), "-q", str(img)], input=f"label: {table}\n2048,65536,L\n67584,,L\n",
                       text=True, check=True)
        for n, (start, sectors) in enumerate(((2048, 65536), (67584, 196608 - 67584 - 2048)), 1):
            subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-L", f"{table}{n}",
                            "-E", f"offset={start * 512}", str(img), f"{sectors // 2}k"], check=True)
    before = [sha256_file(str(tmp_path / n)) for n in ("mbr.img", "gpt.img")]
    g = guest("extscan-partitions", ["--direct", "--disk", f"{tmp_path / 'mbr.img'},if=virtio-blk",
                                     "--disk", f"{tmp_path / 'gpt.img'},if=ahci"])
    g.wait_shell()
    for v in json.loads(g.check("extscan --json")):
        found[v["device"]] = v.get("label")
    assert g.poweroff() == 0
    assert found == {"/dev/vda1": "dos1", "/dev/vda2": "dos2", "/dev/sda1": "gpt1", "/dev/sda2": "gpt2"}, found
    assert [sha256_file(str(tmp_path / n)) for n in ("mbr.img", "gpt.img")] == before
