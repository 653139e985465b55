"""Every emulated storage controller of the README, one boot each, with two
disks on it: a host loop device given read-only (qemu/run's default), on
which the image's rescue-smoke runs the battery qemu/smoke runs and
qemu/smoke's own verdicts judge it (found through this controller, the
host's size, sector sizes and bytes, reads, ext volume clean, read-only in
the guest's kernel or writes discarded, the host's bytes unchanged); and an
ext4 image given read-write: found, checked, read, written, then verified on
the host."""
import json
import os
import shutil
import subprocess

import pytest

from disks import cat, fsck_clean, loop_device, sha256_file, tree_fs
from runner.diskspec import parse_disk
from runner.verdicts import match, unchanged, verdicts as judge
from runner.views import host_view

# (name, qemu/run controller, extra disk options)
CONTROLLERS = [
    ("virtio-blk", "virtio-blk", ""), ("virtio-scsi", "virtio-scsi", ""), ("nvme", "nvme", ""),
    ("ahci", "ahci", ""), ("piix-ide", "ide", ""), ("lsi53c895a", "lsi53c895a", ""),
    ("megasas", "megasas", ""), ("megasas-gen2", "megasas-gen2", ""),
    pytest.param("mptsas1068", "mptsas1068", "", marks=pytest.mark.xfail(strict=True, reason=(
        "QEMU 7.2's SAS1068 model and Linux's mptsas (6.12 and 7.2): the HBA and its 8 phys come up, "
        "but no SAS port or end device is ever reported, so no disk appears"))),
    ("pvscsi", "pvscsi", ""), ("am53c974", "am53c974", ""), ("lsi53c810", "lsi53c810", ""),
    ("dc390", "dc390", ""),
    ("usb-storage-xhci", "usb-xhci", ""), ("usb-storage-ehci", "usb-ehci", ""),
    ("usb-storage-uhci", "usb-uhci", ""), ("usb-storage-ohci", "usb-ohci", ""),
    ("usb-uas", "usb-uas", ""), ("sdhci-sd-card", "sdhci", ""),
    ("nvme-4k-native", "nvme", ",blocksize=4096"),
]


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    # 64 MiB: a power of two, as an SD card must be.
    # 4 KiB blocks, so the same image also mounts from a 4K-native disk.
    return tree_fs(str(tmp_path_factory.mktemp("golden")), "64M", options=["-O", "extent", "-b", "4096"])


# Waits for the volume labelled $L, polling for 15 s of the guest's clock
# (counted polls stretched under load, each blkid taking longer than its
# sleep); prints its device.
FIND = ("end=$(($(cut -d. -f1 /proc/uptime) + 15)); until d=$(blkid -L $L); do "
        "[ $(cut -d. -f1 /proc/uptime) -lt $end ] || break; usleep 100000; done; [ -n \"$d\" ] && echo DEV=$d")


def find(g, name, label):
    # Beyond the 15 s, a blkid may wait on one read as long as the driver's
    # own timeout (NVMe's is 30 s) before the loop sees the clock.
    status, out = g.run(f"L={label}; {FIND}", timeout=60)
    assert status == 0 and "DEV=" in out, f"controller {name}: the disk {label} did not appear within 15 s " \
        f"(driver missing?); block devices: {g.run('ls /sys/class/block')[1]}; " \
        f"the kernel's last lines: {g.run('dmesg | tail -20')[1]}"
    return out.split("DEV=")[1].split()[0]


def check_smoke(g, name, spec, view, dev):
    """rescue-smoke in the guest on DEV, judged by qemu/smoke against the host's VIEW of SPEC."""
    out = g.check(f"rescue-smoke --json --seconds=1 {dev}", timeout=120)
    answers = [json.loads(line[len("smoke-json: "):]) for line in out.splitlines() if line.startswith("smoke-json: ")]
    verdicts = judge(view, match(view, answers))
    bad = {k: d for k, (ok, d) in verdicts.items() if not ok}
    assert not bad and "mode" in verdicts, f"controller {name}: qemu/smoke's checks of {spec} failed: {bad}"
    return verdicts


@pytest.mark.parametrize("name,ctrl,extra", CONTROLLERS,
                         ids=[c.values[0] if hasattr(c, "values") else c[0] for c in CONTROLLERS])
def test_controller(guest, golden, tmp_path, name, ctrl, extra):
    # The read-only disk: the same volume on a disk of another size (the
    # battery matches disks by size where a controller drops the serial).
    ro_img = str(tmp_path / "ro.img")
    shutil.copy(golden, ro_img)
    subprocess.run(["tune2fs", "-L", "xrro", ro_img], check=True, capture_output=True)
    os.truncate(ro_img, 128 << 20)
    before = sha256_file(ro_img)
    img = str(tmp_path / "disk.img")
    shutil.copy(golden, img)
    # The SD card controller takes one card: the loop device alone, writes discarded.
    two = ctrl != "sdhci"
    with loop_device(ro_img) as loop:
        spec = f"{loop},if={ctrl}{extra}"
        view = host_view(0, parse_disk(spec))
        args = ["--direct", "--disk", spec] + (["--disk", f"{img},if={ctrl},rw{extra}"] if two else [])
        g = guest(f"ctrl-{name}", args)
        g.wait_shell()
        ro_dev = find(g, name, "xrro")
        if ctrl == "lsi53c895a":
            # Kernel patch 0009: in a virtual machine the SCRIPTS stay in
            # host memory, and the disk works so (test_vfio: passed through).
            assert "SCRIPTS run from host memory" in g.check("dmesg | grep sym0: || true"), \
                "sym53c8xx runs its SCRIPTS from the on-chip RAM in a virtual machine"
        verdicts = check_smoke(g, name, spec, view, ro_dev)
        if view["mode"] == "discard":
            # The write goes through the controller into QEMU's throw-away overlay and reads back.
            assert "cannot take a read-only drive" in verdicts["mode"][1], verdicts["mode"]
            g.check(f"mount {ro_dev} /mnt && echo 'discarded on {name}' > /mnt/discarded && umount /mnt && "
                    f"echo 3 > /proc/sys/vm/drop_caches && mount -o ro {ro_dev} /mnt")
            assert g.check("cat /mnt/discarded; umount /mnt").strip() == f"discarded on {name}"
        if two:
            dev = find(g, name, "xrdata")
            if "4k" in name:
                assert g.check(f"cat /sys/class/block/{os.path.basename(dev)}/queue/logical_block_size").strip() \
                    == "4096"
            status, out = g.run(f"e2fsck -fn {dev}")
            assert status == 0, f"controller {name}: e2fsck -fn {dev} exited {status}: {out}"
            g.check(f"mount -o ro {dev} /mnt")
            out = g.check("cd /mnt && sha256sum -c SHA256SUMS | grep -vc ': OK$' ; cd /")
            assert out.strip().splitlines()[-1] == "0", f"controller {name}: checksum mismatch: {out}"
            g.check("umount /mnt")
            g.check(f"mount {dev} /mnt && echo 'written through {name}' > /mnt/written && umount /mnt")
        assert g.poweroff() == 0
        g.assert_no_fatal()
        same = unchanged(view)
    assert same[0] and sha256_file(ro_img) == before, f"controller {name}: the read-only disk changed on the host"
    if two:
        fsck_clean(img)
        assert cat(img, "/written") == f"written through {name}\n".encode()
