"""qemu/smoke, the one command for "does this controller read my disks":
a healthy host disk (a loop device) passes every check on three
controllers, and the same disk with a read error injected by QEMU's
blkdebug fails the read check, which names the sector."""
import json
import os

import pytest

from disks import loop_device, make_fs, tree
from harness import SMP, TOP, host, scaled

SMOKE = os.path.join(TOP, "qemu", "smoke")
BAD_SECTOR = 8200                 # inside the fifth MiB: the error is pinned to its 4 KiB
# A run takes 15 to 30 s; smoke gives up on its guest well before the harness
# gives up on smoke, so a hang ends in smoke's message and the console's tail.
GUEST_TIMEOUT = round(scaled(240))
# One vCPU, as every test guest (harness.SMP). With two, this was the one
# guest of the suite that could hang with no word in the kernel's early set-up
# (switching clock source) under TCG on a loaded host: once in CI, once in
# 181 boots here with six guests on the two cores.
SMOKE_ARGS = ["--seconds", "1", "--smp", SMP, "--timeout", str(GUEST_TIMEOUT)]


@pytest.fixture
def loop_disk(tmp_path):
    src = tmp_path / "tree"
    src.mkdir()
    tree(str(src))
    img = str(tmp_path / "disk.img")
    make_fs(img, "64M", populate=str(src))
    with loop_device(img) as dev:
        yield dev


@pytest.mark.parametrize("ctrl", ["virtio-blk", "nvme", "ahci"])
def test_smoke_passes_a_healthy_disk_and_names_a_bad_sector(loop_disk, tmp_path, ctrl):
    out = tmp_path / "smoke.json"
    r = host([SMOKE, *SMOKE_ARGS, "--json", str(out),
              "--disk", f"{loop_disk},if={ctrl}"], timeout=GUEST_TIMEOUT + scaled(60))
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads(out.read_text())
    assert result["passed"] is True and len(result["disks"]) == 1, result
    checks = result["disks"][0]["checks"]
    assert all(c["ok"] for c in checks.values()), checks
    assert checks["size"]["detail"].startswith(f"{64 << 20} bytes"), checks["size"]
    assert "ext4 e2fsck -fn 0" in checks["ext"]["detail"], checks["ext"]
    assert "MB/s" in checks["read"]["detail"], checks["read"]
    # QEMU's NVMe and ATA disks answer for their health (disks/health).
    if ctrl in ("nvme", "ahci"):
        assert checks["health"]["detail"] == "PASSED", checks["health"]
    # Read-only where the controller can take it, else writes discarded; the host's bytes as before either way.
    mode = {"ahci": "writes go to a throw-away overlay", "nvme": "read-only in QEMU"}
    assert checks["mode"]["detail"].startswith(mode.get(ctrl, "read-only in the guest's kernel, a write refused")), \
        checks["mode"]
    assert checks["unchanged"]["ok"], checks["unchanged"]
    # The guest found the host's disk by its serial, the loop device's name
    # (not compared on AHCI, as before).
    if ctrl != "ahci":
        assert result["disks"][0]["guest"]["serial"] == os.path.basename(loop_disk), result["disks"][0]
    # The same disk, reading it fails at one sector.
    rules = tmp_path / "bad-sector.conf"
    rules.write_text(f'[inject-error]\nevent = "read_aio"\nerrno = "5"\nsector = "{BAD_SECTOR}"\n'
                     'iotype = "read"\n')
    r = host([SMOKE, *SMOKE_ARGS, "--json", str(out),
              "--disk", f"{loop_disk},if={ctrl},blkdebug={rules}"], timeout=GUEST_TIMEOUT + scaled(60))
    assert r.returncode == 1, r.stdout + r.stderr
    checks = json.loads(out.read_text())["disks"][0]["checks"]
    first = BAD_SECTOR - BAD_SECTOR % 8
    assert not checks["read"]["ok"] and f"at sector {first}" in checks["read"]["detail"], checks["read"]
    assert f"read: sequential read error at sector {first}" in r.stdout, r.stdout


def test_smoke_on_arm64_uses_the_machines_console(tmp_path):
    """qemu/smoke --arch arm64: the virt machine's console is the PL011
    (ttyAMA0), not ttyS0, so the battery's answers reach smoke there and a
    healthy disk passes."""
    src = tmp_path / "tree"
    src.mkdir()
    tree(str(src))
    img = str(tmp_path / "disk.img")
    make_fs(img, "64M", populate=str(src))
    out = tmp_path / "smoke.json"
    r = host([SMOKE, "--arch", "arm64", *SMOKE_ARGS, "--json", str(out), "--disk", f"{img},if=virtio-blk"],
             timeout=GUEST_TIMEOUT + scaled(60))
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads(out.read_text())
    assert result["passed"] is True and len(result["disks"]) == 1, result
