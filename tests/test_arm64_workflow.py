"""The rescue workflow on arm64 (QEMU virt, TCG, direct kernel boots), two
boots for many checks, each boot several guests' worth of work under TCG:

- the controller matrix: one ext4 disk on each controller an arm64 server
  or its VM has, all in one guest; each is found through its own driver,
  checked and read, and a file written there is on the host afterwards;
  the same guest writes to a journalled volume and loses power;
- the crashed volume looked at read-only (journal replayed in RAM, the disk
  byte-identical), LUKS on LVM on RAID1 assembled read-only, key-only SSH
  and the report with its architecture, in one networked guest."""
import os
import re
import shutil

import pytest

from disks import cat, committed_writes, make_fs, sha256_file, tree
from harness import SERIAL_CONSOLE, Guest, cut_power, host, scaled
from stacks import PASS, STACK_LUKS_DEV
import test_arm64
import test_assemble
from test_assemble import copies
from test_controllers import find
from test_network import Collector, boot, free_port, keypair, ssh, valid_report

# The other modules' fixtures: the arm64 image is there (autouse), and the
# RAID1 legs of LUKS on LVM on RAID1 (made once, in the image cache).
arm64_built = test_arm64.arm64_built
prepared = test_assemble.prepared

# qemu/run's controller -> the driver the arm64 kernel must reach the disk through.
CONTROLLERS = {"virtio-blk": "virtio_blk", "virtio-scsi": "virtio_scsi", "nvme": "nvme", "ahci": "ahci",
               "megasas": "megaraid_sas", "lsi53c895a": "sym53c8xx", "usb-xhci": "usb-storage"}
CRASH_LABEL = "xrcrash"
# The drivers bound along a block device's path in sysfs (controller, bus, host).
DRIVERS = ("p=$(readlink -f /sys/class/block/$D); while [ -n \"$p\" ] && [ \"$p\" != /sys ]; do "
           "[ -e \"$p/driver\" ] && basename \"$(readlink \"$p/driver\")\"; p=${p%/*}; done")


def label(ctrl):
    return "xr" + re.sub(r"[^a-z0-9]", "", ctrl)[:10]


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    """The controller matrix in one arm64 guest (asserted here, its result
    kept for its test), which ends by writing to CRASH_LABEL and cutting the
    power. Returns (per-controller outcome, the crashed image)."""
    folder = tmp_path_factory.mktemp("arm64-matrix")
    src = folder / "tree"
    src.mkdir()
    tree(str(src))
    disks = {}
    for ctrl in CONTROLLERS:
        disks[ctrl] = str(folder / f"{ctrl}.img")
        make_fs(disks[ctrl], "48M", label=label(ctrl), populate=str(src))
    crash = str(folder / "crash.img")
    make_fs(crash, "64M", label=CRASH_LABEL)
    args = ["--arch", "arm64", "--direct", "--mem", "768"]
    for ctrl, img in disks.items():
        args += ["--disk", f"{img},if={ctrl},rw"]
    args += ["--disk", f"{crash},if=virtio-blk,rw"]
    g = Guest("arm64-matrix", args, boot_timeout=240).start()
    seen = {}
    try:
        g.wait_shell()
        for ctrl, driver in CONTROLLERS.items():
            try:
                dev = find(g, ctrl, label(ctrl))
            except AssertionError as e:
                seen[ctrl] = {"missing": str(e)}
                continue
            drivers = g.check(f"D={os.path.basename(dev)}; {DRIVERS}").split()
            status, out = g.run(f"e2fsck -fn {dev}", timeout=120)
            read = g.run(f"(mount -o ro {dev} /mnt && cd /mnt && sha256sum -c -s SHA256SUMS); s=$?; umount /mnt; "
                         "[ $s = 0 ]", timeout=120)[0]
            wrote = g.run(f"mount {dev} /mnt && echo 'written through {ctrl} on arm64' > /mnt/written && "
                          "umount /mnt")[0]
            seen[ctrl] = {"device": dev, "drivers": drivers, "fsck": (status, out), "read": read, "wrote": wrote}
        dev = find(g, "virtio-blk", CRASH_LABEL)
        g.check(f"mkdir -p /mnt/c && mount {dev} /mnt/c && " + committed_writes("/mnt/c"))
        cut_power(g, crash)
        g.assert_no_fatal()
    finally:
        g.kill()
    # The matrix test removes the guest's log once it found nothing wrong.
    return {"seen": seen, "disks": disks, "crash": crash, "log": g.log_path}


def test_arm64_controller_matrix(crashed):
    """Each controller's disk through its own driver: clean, every file's
    checksum right, and the file written in the guest is on the host."""
    bad = []
    for ctrl, driver in CONTROLLERS.items():
        s = crashed["seen"][ctrl]
        if "missing" in s:
            bad.append(s["missing"])
            continue
        if driver not in s["drivers"]:
            bad.append(f"{ctrl}: {s['device']} is reached through {s['drivers']}, not {driver}")
        if s["fsck"][0] != 0:
            bad.append(f"{ctrl}: e2fsck -fn {s['device']} exited {s['fsck'][0]}: {s['fsck'][1][-400:]}")
        if s["read"] or s["wrote"]:
            bad.append(f"{ctrl}: reading (status {s['read']}) or writing (status {s['wrote']}) failed")
        img = crashed["disks"][ctrl]
        r = host(["e2fsck", "-fn", img])
        if r.returncode:
            bad.append(f"{ctrl}: the host's e2fsck -fn exited {r.returncode}")
        if cat(img, "/written") != f"written through {ctrl} on arm64\n".encode():
            bad.append(f"{ctrl}: the guest's file is not on the host")
    assert not bad, "; ".join(bad) + f"; the guest's log: {crashed['log']}"
    os.unlink(crashed["log"])


def test_arm64_crashed_volume_stack_ssh_and_report(guest, crashed, prepared, tmp_path):
    folder = str(tmp_path)
    key, pub = keypair(folder, "admin")
    other, _ = keypair(folder, "stranger")
    crash = str(tmp_path / "crash.img")
    shutil.copyfile(crashed["crash"], crash)
    images = [crash] + copies(prepared, tmp_path, ["s1", "s2"])
    before = {i: sha256_file(i) for i in images}
    port = free_port()
    collector = Collector()
    try:
        g = boot(guest, "arm64-workflow", f'ip=dhcp rescue.ssh_key="{pub}" rescue.report={collector.url}',
                 [f"virtio-net-pci,fwd={port}:22"], images, arch="arm64", boot_timeout=300)
        # The report: one, valid, naming the architecture.
        doc = valid_report(*collector.wait(scaled(120))[0])
        assert doc["architecture"] == "aarch64", doc["architecture"]
        assert doc["cmdline"].startswith(f"console={SERIAL_CONSOLE['arm64']}"), doc["cmdline"]
        assert any(d.get("label") == CRASH_LABEL for d in doc["extscan"]), doc["extscan"]

        # Key-only SSH: the admin's key gets root's shell, another key nothing.
        assert re.search(r"SSH on port 22 for 1 key\(s\), root; host keys: ED25519 SHA256:\S+", g.serial_log())
        r = ssh(key, port, "uname -m; extscan --json", folder)
        assert r.returncode == 0, r.stderr
        machine, _, scan = r.stdout.partition("\n")
        assert machine == "aarch64" and scan.strip() == g.check("extscan --json").strip()
        r = ssh(other, port, "true", folder)
        assert r.returncode == 255 and "Permission denied (publickey)" in r.stderr, r.stderr

        # The crashed volume, read-only: the journal replayed in RAM, the last
        # committed files there, the kernel told the disk is read-only.
        out = g.check("rescue-fsck check /dev/vda", timeout=300)
        assert "/dev/vda: journal replayed in RAM; the disk is untouched" in out, out
        g.check("mkdir -p /mnt/x && /lib/extrescue/disks/mount-ro /dev/vda /mnt/x", timeout=120)
        assert g.check("cat /mnt/x/file1 /mnt/x/file8").split() == ["committed-1", "committed-8"]
        g.check("(cd /mnt/x && md5sum -c big.md5)")
        assert g.run("touch /mnt/x/new")[0] != 0, "a read-only mount took a write"
        assert g.check("blockdev --getro /dev/vda").strip() == "1", "the kernel was not told: vda is writable"
        g.check("umount /mnt/x && /lib/extrescue/disks/release-ro")

        # LUKS on LVM on RAID1, assembled read-only from the two legs.
        status, out = g.run(f"printf '%s\\n' '{PASS}' | rescue-assemble", timeout=300)
        assert status == 0, out
        assert re.search(r"md +/dev/md\S+ raid1 from vd\w vd\w: started readonly", out), out
        assert re.search(r"lvm +/dev/stackvg/crypt \(.*\): active read-only", out), out
        assert re.search(r"luks +/dev/\S+ -> /dev/mapper/luks-[0-9a-f-]+: opened read-only", out), out
        for dm in g.check("ls /sys/class/block | grep -E '^(md|dm-)'").split():
            assert g.check(f"cat /sys/class/block/{dm}/ro").strip() == "1", f"{dm} is writable"
        luks = g.check(STACK_LUKS_DEV).strip()
        g.check(f"e2fsck -fn /dev/{luks}", timeout=120)
        g.check(f"mkdir -p /mnt/s && mount -o ro,noload /dev/{luks} /mnt/s && (cd /mnt/s && sha256sum -c -s SHA256SUMS) "
                "&& umount /mnt/s", timeout=120)
        g.check("rescue-assemble --stop")
        assert g.poweroff() == 0
        g.assert_no_fatal()
    finally:
        collector.close()
    changed = [os.path.basename(i) for i in images if sha256_file(i) != before[i]]
    assert not changed, f"the read-only session wrote to {changed}"
    assert "needs_recovery" in host(["dumpe2fs", "-h", crash]).stdout, "the journal was replayed on the disk"
