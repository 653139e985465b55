"""iobench in the booted image: its refusals leave disks untouched, bad
arguments get one line, every workload runs on tiny sizes with the table and
JSON in the documented shape, and an interrupted run unmounts what it mounted."""
import json
import os
import re
import subprocess

from disks import blank, make_fs, sha256_file
from harness import boot_with_disks

TINY = "--seq-size=4M --chunks=8 --chunk-size=256K --read-size=4M --procs=4 --proc-size=1M"
CONFIGS = ["raw device", "raw device, O_DIRECT", "ext2", "ext3 writeback", "ext3 ordered", "ext3 journal",
           "ext3 writeback, ext. journal", "ext3 ordered, ext. journal",
           "ext3 journal, ext. journal", "ext3+extents", "ext4", "ext4 nodelalloc"]


def scratch(tmp_path, name, size):
    return blank(str(tmp_path / name), size)


def refused(g, command, expect):
    status, out = g.run(command)
    lines = [line for line in out.splitlines() if line.strip()]
    assert status == 2, f"'{command}' exited {status}, not 2: {out}"
    assert len(lines) == 1 and lines[0].startswith("iobench: "), f"not one iobench line: {out!r}"
    assert re.search(expect, lines[0]), f"'{command}': {lines[0]!r} does not say {expect!r}"


def test_refusals_and_bad_arguments(guest, tmp_path):
    blank = scratch(tmp_path, "blank.img", "96M")
    with_fs = str(tmp_path / "fs.img")
    make_fs(with_fs, "32M", label="xrkeep")
    parted = scratch(tmp_path, "parted.img", "32M")
    with open(parted, "r+b") as f:    # an MBR with one Linux partition from sector 2048
        f.seek(446)
        f.write(bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + (63488).to_bytes(4, "little"))
        f.seek(510)
        f.write(b"\x55\xaa")
    before = {d: sha256_file(d) for d in (blank, with_fs, parted)}

    g = boot_with_disks(guest, "iobench-refusals", [blank, with_fs, parted])
    refused(g, "iobench --matrix /dev/vda", r"destroys all data on /dev/vda; .*--yes-destroy=/dev/vda")
    refused(g, "iobench --matrix /dev/vda --yes-destroy=/dev/vdb", r"--yes-destroy=/dev/vda")
    refused(g, "iobench --matrix /dev/vdb --yes-destroy=/dev/vdb", r"/dev/vdb holds a 'ext4' signature \(blkid -p\); add --force")
    refused(g, "iobench --matrix /dev/vdc --yes-destroy=/dev/vdc", r"/dev/vdc holds a 'dos' partition table")
    g.check("mkdir -p /mnt/keep && mount -o ro,noload /dev/vdb /mnt/keep")
    refused(g, "iobench --matrix /dev/vdb --yes-destroy=/dev/vdb --force", r"/dev/vdb is in use: it is mounted on /mnt/keep")
    g.check("umount /mnt/keep")
    refused(g, f"iobench --matrix /dev/vda --yes-destroy=/dev/vda {TINY} --read-size=1G", r"/dev/vda \(96 MiB\) is too small: --read-size needs 1024 MiB")
    refused(g, "iobench --matrix /dev/vda --yes-destroy=/dev/vda --journal-dev=/dev/vda --yes-destroy=/dev/vda", r"journal device must differ")
    refused(g, "iobench --matrix /dev/null --yes-destroy=/dev/null", r"/dev/null is not a block device")
    refused(g, "iobench --matrix /dev/vda --yes-destroy=/dev/vda --seq-size=12Q", r"bad size '12Q'")
    refused(g, "iobench --matrix /dev/vda --yes-destroy=/dev/vda --procs=0", r"bad count '0'")
    refused(g, "iobench --matrix /dev/vda --yes-destroy=/dev/vda --seq-size=1000", r"multiples of 4K")
    refused(g, "iobench --matrix /dev/vda --yes-destroy=/dev/vda --configs=ext5", r"unknown configuration 'ext5'")
    refused(g, "iobench --matrix /dev/vda --yes-destroy=/dev/vda --configs=ext3-ordered-extj", r"needs --journal-dev")
    refused(g, "iobench --bogus", r"unknown option '--bogus'")
    refused(g, "iobench", r"no device")
    assert "usage: iobench" in g.check("iobench --help")
    g.check("sync")
    g.poweroff()
    changed = [os.path.basename(d) for d, h in before.items() if sha256_file(d) != h]
    assert not changed, f"a refused iobench run wrote to {changed}"


# Foreign filesystems a rescue disk meets, made by the host's own mkfs.
FOREIGN = [("ntfs", ["mkntfs", "-F", "-Q", "-q"]), ("exfat", ["mkfs.exfat"]), ("f2fs", ["mkfs.f2fs", "-q"])]


def test_refuses_foreign_signatures(guest, tmp_path):
    disks = []
    for kind, mkfs in FOREIGN:
        img = scratch(tmp_path, f"{kind}.img", "96M")
        r = subprocess.run(mkfs + [img], capture_output=True, text=True)
        assert r.returncode == 0, f"{mkfs[0]}: {r.stdout}{r.stderr}"
        disks.append(img)
    before = {d: sha256_file(d) for d in disks}
    g = boot_with_disks(guest, "iobench-foreign", disks)
    for i, (kind, _) in enumerate(FOREIGN):
        dev = f"/dev/vd{chr(ord('a') + i)}"
        refused(g, f"iobench --matrix {dev} --yes-destroy={dev} {TINY}", rf"{dev} holds a '{kind}' signature")
    g.poweroff()
    changed = [os.path.basename(d) for d, h in before.items() if sha256_file(d) != h]
    assert not changed, f"a refused iobench run wrote to {changed}"


def test_every_workload_on_tiny_sizes(guest, tmp_path):
    disk = scratch(tmp_path, "bench.img", "96M")
    journal = scratch(tmp_path, "journal.img", "16M")
    g = boot_with_disks(guest, "iobench-tiny", [disk, journal])
    out = g.check(f"iobench --matrix /dev/vda --yes-destroy=/dev/vda --journal-dev=/dev/vdb "
                  f"--yes-destroy=/dev/vdb {TINY} 2>/tmp/progress", timeout=600)
    assert out.startswith("iobench on /dev/vda (96 MiB), external journal on /dev/vdb (16 MiB)"), out
    sections = re.split(r"\n\n", out.strip())
    titles = [s.splitlines()[0] for s in sections[1:5]]
    assert titles[0].startswith("Sequential write: 4 MiB in 512 KiB writes"), titles
    assert titles[1].startswith("Synchronous chunks: 8 files of 256 KiB"), titles
    assert titles[2].startswith("Large-file read with md5: 4 MiB"), titles
    assert titles[3].startswith("Parallel: 4 processes each writing 1 MiB"), titles
    row = re.compile(r"^  (.{29}) (.{10}) +(\d+\.\d\d) +(\d+\.\d) +(\d+\.\d\d|-)  (.*)$")
    for section, per_config in zip(sections[1:5], (1, 5, 1, 1)):
        rows = [row.match(line) for line in section.splitlines()[2:]]
        assert all(rows), section
        names = [r.group(1).strip() for r in rows]
        expected = [c for c in CONFIGS for _ in range(per_config)]
        if section.startswith("Synchronous"):   # the raw device has no mount -o sync
            expected.remove("raw device")
        if section.startswith(("Synchronous", "Parallel")):
            expected = [c for c in expected if c != "raw device, O_DIRECT"]
        if section.startswith("Parallel"):
            expected = [c for c in expected if c != "raw device"]
        assert names == expected, section
        assert all(float(r.group(4)) > 0 for r in rows), section
    assert "ext4                               " in sections[1] and "goal >= 0.90" in sections[1]
    assert "0.70 (214-216 MB/s)" in sections[1], sections[1]
    assert "0.72 (60 MB/s)" in sections[2], sections[2]
    assert sections[3].count(" ok") == 12 and "MISMATCH" not in sections[3], sections[3]
    progress = g.check("cat /tmp/progress")
    assert "iobench: [12/12] ext4 nodelalloc: parallel clients" in progress, progress
    assert "iobench" not in g.check("cat /proc/mounts") and not g.check("ls /tmp | grep iobench.; true").strip()

    out = g.check(f"iobench --matrix /dev/vda --yes-destroy=/dev/vda --force --configs=raw,ext4 "
                  f"--workloads=seq-write,read --json {TINY} 2>/dev/null", timeout=300)
    doc = json.loads(out)
    assert doc["device"] == "/dev/vda" and doc["device_bytes"] == 96 << 20
    assert doc["sizes"]["seq_write"] == 4 << 20 and doc["sizes"]["block"] == 512 << 10
    got = [(r["workload"], r["config"]) for r in doc["results"]]
    assert got == [("seq-write", "raw"), ("read", "raw"), ("seq-write", "ext4"), ("read", "ext4")], got
    for r in doc["results"]:
        assert r["bytes"] == 4 << 20 and r["seconds"] > 0 and r["mb_per_s"] > 0 and r["ratio"] > 0, r
        assert r["ratio_basis"] == "raw"
    assert doc["results"][0]["reference_ratio"] == [1.0, 1.0]
    assert all(r["md5_ok"] for r in doc["results"] if r["workload"] == "read")
    g.poweroff()


def test_interrupt_unmounts(guest, tmp_path):
    disk = scratch(tmp_path, "bench.img", "96M")
    g = boot_with_disks(guest, "iobench-interrupt", [disk])
    g.check("iobench --matrix /dev/vda --yes-destroy=/dev/vda --configs=ext4 --workloads=parallel "
            "--procs=4 --proc-size=64G >/tmp/out 2>/tmp/err & pid=$!")
    g.check("for i in $(seq 100); do grep -q ' ext4 ' /proc/mounts && break; sleep 0.2; done; grep ' ext4 ' /proc/mounts")
    # The signal goes to iobench alone, not to its clients: they stop only
    # if iobench tells them (64 GiB each would outlast the wait many times).
    # One command line: the shell reaps a finished job before its next
    # prompt, and a wait after that knows no such job (127).
    status, _ = g.run("sleep 1; kill -INT $pid; wait $pid", timeout=120)
    assert status == 130, f"interrupted iobench exited {status}"
    err = g.check("cat /tmp/err")
    assert "iobench: interrupted; unmounted the test filesystem; /dev/vda holds a partial test filesystem" in err, err
    assert " ext4 " not in g.check("cat /proc/mounts")
    assert not g.check("ls /tmp | grep iobench.; true").strip(), "the mount point was left behind"
    assert not g.check("cat /tmp/out").strip(), "an interrupted run printed a table"
    g.poweroff()
