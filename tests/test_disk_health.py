"""disks/smart-facts, the one reading of smartctl's answers (the report, the
metrics, rescue-smoke's battery), run by the image's own busybox sh and awk
on answers of each kind of disk: ATA attributes with their decorations,
NVMe's counts with thousands separators, SCSI's grown defects, a failed
verdict, and no answer at all."""
import os
import re
import shutil

import pytest

from harness import OUT, TOP, host

BUSYBOX = os.path.join(OUT, "build", "busybox", "busybox")
FACTS = os.path.join(TOP, "initramfs", "rootfs", "lib", "extrescue", "disks", "smart-facts")

ATA = """=== START OF READ SMART DATA SECTION ===
SMART overall-health self-assessment test result: PASSED

ID# ATTRIBUTE_NAME          FLAG     VALUE WORST THRESH TYPE      UPDATED  WHEN_FAILED RAW_VALUE
  1 Raw_Read_Error_Rate     0x000f   117   099   006    Pre-fail  Always       -       147587864
  5 Reallocated_Sector_Ct   0x0033   100   100   036    Pre-fail  Always       -       12 (Min/Max 0/0)
  9 Power_On_Hours          0x0032   068   068   000    Old_age   Always       -       28543
197 Current_Pending_Sector  0x0012   100   100   000    Old_age   Always       -       8
198 Offline_Uncorrectable   0x0010   100   100   000    Old_age   Offline      -       8
"""
NVME_FAILED = """=== START OF SMART DATA SECTION ===
SMART overall-health self-assessment test result: FAILED!
- NVM subsystem reliability has been degraded
Critical Warning:                   0x04
Media and Data Integrity Errors:    1,234
Error Information Log Entries:      5,678
"""
SCSI = """=== START OF READ SMART DATA SECTION ===
SMART Health Status: OK
Current Drive Temperature:     31 C
Elements in grown defect list: 3
"""
SCSI_FAILING = "SMART Health Status: HARDWARE IMPENDING FAILURE GENERAL HARD DRIVE FAILURE [asc=5d, ascq=10]\n"


@pytest.fixture(scope="module")
def image_shell(tmp_path_factory):
    """A PATH of the image's busybox applets only: its sh and awk, not the host's."""
    assert os.access(BUSYBOX, os.X_OK), f"no {BUSYBOX}; make builds it"
    bin_dir = tmp_path_factory.mktemp("busybox-bin")
    for applet in ("sh", "awk"):
        os.symlink(BUSYBOX, bin_dir / applet)
    return {"PATH": str(bin_dir)}


@pytest.mark.parametrize("answer,facts", [
    (ATA, "passed\t12\t8\t-"),
    (NVME_FAILED, "failed\t-\t-\t1234"),
    (SCSI, "passed\t3\t-\t-"),
    (SCSI_FAILING, "failed\t-\t-\t-"),
    ("", "-\t-\t-\t-"),
    ("Smartctl open device: /dev/vda failed: Inappropriate ioctl for device\n", "-\t-\t-\t-"),
])
def test_smart_facts(image_shell, answer, facts):
    r = host([BUSYBOX, "sh", FACTS], input=answer, env=image_shell)
    assert r.returncode == 0 and r.stdout == facts + "\n", (r.stdout, r.stderr)


def test_health_answers_its_reader_within_its_bound(image_shell, tmp_path):
    """disks/health read through a pipe, as report/make and the battery read
    it, with a smartctl that never answers: the reader has its line once
    --within is up, not when the asking is killed 15 s later. In a mount
    namespace of its own, /run a fresh tmpfs, so the host's is not touched."""
    disks = [n for n in sorted(os.listdir("/sys/class/block"))
             if os.path.exists(f"/sys/class/block/{n}/device") and not os.path.exists(f"/sys/class/block/{n}/partition")
             and not n.startswith(("loop", "ram", "zram", "sr"))]
    if not disks:
        pytest.skip("this host has no whole disk in /sys/class/block to name")
    fake = tmp_path / "bin"
    fake.mkdir()
    for applet in ("sh", "awk", "sleep", "timeout", "mkdir", "mv", "ls", "cat", "tr", "grep", "dmesg", "printf", "rm", "mount", "cut"):
        os.symlink(BUSYBOX, fake / applet)
    (fake / "smartctl").write_text("#!/bin/sh\nexec sleep 60\n")
    (fake / "smartctl").chmod(0o755)
    health = os.path.join(TOP, "initramfs", "rootfs", "lib", "extrescue", "disks", "health")
    script = (f"mount -t tmpfs none /run && mkdir -p /run/extrescue && t0=$(cut -d' ' -f1 /proc/uptime) && "
              f"line=$(sh {health} --within=2 {disks[0]}) && t1=$(cut -d' ' -f1 /proc/uptime) && "
              f"echo \"$line\" && awk -v a=$t0 -v b=$t1 'BEGIN {{print b - a}}'")
    r = host([shutil.which("unshare"), "-m", BUSYBOX, "sh", "-c", script], env={"PATH": str(fake)}, timeout=60)
    assert r.returncode == 0, r.stderr
    line, seconds = r.stdout.splitlines()
    assert re.fullmatch(rf"{disks[0]}\t-\t-\t-\t-\t\d+", line), line
    assert 1 <= float(seconds) < 6, f"disks/health --within=2 answered its reader after {seconds} s"
