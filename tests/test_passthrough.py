"""Raw host block devices through qemu/run: read-only unless --rw; VFIO checks."""
import os
import subprocess

import pytest

from disks import make_fs, sha256_file
from harness import TOP, host

RUN = os.path.join(TOP, "qemu", "run")


@pytest.fixture
def loopdev(tmp_path):
    """A loop device over a fresh ext4 image: a real block device."""
    made = []

    def make(name):
        img = str(tmp_path / f"{name}.img")
        make_fs(img, "32M")
        dev = host(["losetup", "-f", "--show", img]).stdout.strip()
        if not dev:
            pytest.fail("losetup failed: the host needs loop device support")
        made.append(dev)
        return dev

    yield make
    for dev in made:
        subprocess.run(["losetup", "-d", dev])


WRITE = "dd if=/dev/zero of={dev} bs=4096 count=64 conv=fsync 2>&1; sync"


@pytest.mark.parametrize("ctrl,dev", [("virtio-blk", "/dev/vda"), ("ahci", "/dev/sda")])
def test_raw_device_is_read_only_by_default(guest, loopdev, ctrl, dev):
    loop = loopdev("ro")
    before = sha256_file(loop)
    g = guest(f"passthrough-ro-{ctrl}", ["--direct", "--disk", f"{loop},if={ctrl}"])
    g.wait_shell()
    g.run(WRITE.format(dev=dev))
    assert g.poweroff() == 0
    assert sha256_file(loop) == before, f"a write through {ctrl} reached {loop} without --rw"


def test_raw_device_rw_when_asked(guest, loopdev):
    loop = loopdev("rw")
    before = sha256_file(loop)
    g = guest("passthrough-rw", ["--direct", "--rw", "--disk", f"{loop},if=virtio-blk"])
    g.wait_shell()
    g.check(WRITE.format(dev="/dev/vda"))
    assert g.poweroff() == 0
    assert sha256_file(loop) != before, "--rw did not let the write through"


def fake_pci(root, devices, group_of):
    """A fake sysfs tree: DEVICES {bdf: (class, driver)}, GROUP_OF {bdf: group}."""
    for bdf, (klass, driver) in devices.items():
        d = root / "bus/pci/devices" / bdf
        d.mkdir(parents=True)
        (d / "class").write_text(klass + "\n")
        if driver:
            (root / "bus/pci/drivers" / driver).mkdir(parents=True, exist_ok=True)
            os.symlink(root / "bus/pci/drivers" / driver, d / "driver")
        g = root / "kernel/iommu_groups" / group_of[bdf] / "devices"
        g.mkdir(parents=True, exist_ok=True)
        os.symlink(d, g / bdf)
        os.symlink(root / "kernel/iommu_groups" / group_of[bdf], d / "iommu_group")


def run_pci(root, *args):
    env = dict(os.environ, EXTRESCUE_SYSFS=str(root))
    return host([RUN, "--dry-run", "--iso", "/dev/null"] + list(args), env=env)


def test_pci_refused_without_iommu(tmp_path):
    (tmp_path / "kernel/iommu_groups").mkdir(parents=True)
    r = run_pci(tmp_path, "--pci", "01:00.0")
    assert r.returncode != 0 and "needs an IOMMU" in r.stderr and len(r.stderr.splitlines()) == 1


def test_pci_command_line_and_bind_plan(tmp_path):
    fake_pci(tmp_path, {"0000:01:00.0": ("0x010802", "nvme"), "0000:00:01.0": ("0x060400", "pcieport")},
             {"0000:01:00.0": "7", "0000:00:01.0": "7"})
    r = run_pci(tmp_path, "--pci", "01:00.0")
    assert r.returncode == 0, r.stderr
    assert "-device vfio-pci,host=0000:01:00.0" in r.stdout
    assert "would bind 0000:01:00.0 (now nvme) to vfio-pci" in r.stdout


def test_pci_incomplete_group_refused(tmp_path):
    fake_pci(tmp_path, {"0000:02:00.0": ("0x010700", "mpt3sas"), "0000:02:00.1": ("0x020000", "igb")},
             {"0000:02:00.0": "9", "0000:02:00.1": "9"})
    r = run_pci(tmp_path, "--pci", "0000:02:00.0")
    assert r.returncode != 0 and "also holds 0000:02:00.1 (igb)" in r.stderr, r.stderr
    r = run_pci(tmp_path, "--pci", "0000:02:00.0", "--pci", "0000:02:00.1")
    assert r.returncode == 0 and r.stdout.count("vfio-pci,host=") == 2, r.stderr
