"""Host disks and PCI devices through qemu/run: read-only unless asked,
never a device the host is using, and every PCI device given back (a fake
sysfs and kernel stand in for the IOMMU this machine lacks)."""
import json
import os
import shutil
import signal
import stat
import subprocess
import time

import pytest

from disks import make_fs, sha256_file
from fake_host import FakeHost
from harness import TOP, host

RUN = os.path.join(TOP, "qemu", "run")


@pytest.fixture
def loopdev(tmp_path):
    """A loop device over a fresh ext4 image: a real block device."""
    made = []

    def make(name, size="32M"):
        img = str(tmp_path / f"{name}.img")
        make_fs(img, size)
        dev = host(["losetup", "-f", "--show", img]).stdout.strip()
        if not dev:
            pytest.fail("losetup failed: the host needs loop device support")
        made.append(dev)
        return dev

    yield make
    for dev in made:
        subprocess.run(["losetup", "-d", dev])


# What the guest sees of each disk: name, bytes, logical block size, read-only
# flag, sha256 of the whole disk; then a write of 64 KiB at 1 MiB and its status.
LOOK = ("for d in /sys/block/vd* /sys/block/sd* /sys/block/nvme*n*; do [ -e \"$d\" ] || continue; "
        "n=/dev/${d##*/}; [ -b $n ] || continue; "
        "echo DISK ${d##*/} $(blockdev --getsize64 $n) $(blockdev --getss $n) $(blockdev --getro $n) "
        "$(sha256sum < $n | cut -c1-64); done")
WRITE = ("for d in /sys/block/vd* /sys/block/sd* /sys/block/nvme*n*; do [ -e \"$d\" ] || continue; "
         "n=/dev/${d##*/}; [ -b $n ] || continue; "
         "dd if=/dev/urandom of=$n bs=64k count=1 seek=16 oflag=direct conv=fsync 2>/dev/null; "
         "echo WROTE ${d##*/} $?; done")
MODES = {"ro": "", "discard": ",mode=discard", "overlay": ",overlay={tmp}/kept.qcow2", "rw": ",rw"}


@pytest.mark.parametrize("ctrl", ["virtio-blk", "nvme", "ahci"])
def test_each_mode_on_a_host_disk(guest, loopdev, tmp_path, ctrl):
    """Four loop devices, one per mode, told apart in the guest by size: ro
    is read-only in the guest's kernel (ahci, which cannot take a read-only
    drive, discards instead), discard and overlay take the write and leave
    the host's bytes, overlay keeps it in its qcow2, rw reaches the host."""
    disks, before, args = {}, {}, ["--direct"]
    for i, mode in enumerate(MODES):
        loop = loopdev(mode, f"{32 + 8 * i}M")
        disks[(32 + 8 * i) << 20], before[mode] = mode, sha256_file(loop)
        args += ["--disk", f"{loop},if={ctrl}{MODES[mode].format(tmp=tmp_path)}"]
        if mode == "overlay":
            base = loop
    g = guest(f"passthrough-{ctrl}", args)
    g.wait_shell()
    seen = {}
    for line in g.check(LOOK, timeout=120).splitlines():
        f = line.split()
        if f[:1] == ["DISK"] and int(f[2]) in disks:
            seen[disks[int(f[2])]] = {"name": f[1], "ss": f[3], "ro": f[4], "sha": f[5]}
    assert sorted(seen) == sorted(MODES), seen
    wrote = dict(line.split()[1:] for line in g.check(WRITE, timeout=120).splitlines() if line.startswith("WROTE"))
    assert g.poweroff() == 0
    for mode, s in seen.items():
        assert s["sha"] == before[mode] and s["ss"] == "512", (mode, s)
    if ctrl == "ahci":                  # discarded: the write succeeds in the guest only
        assert seen["ro"]["ro"] == "0" and wrote[seen["ro"]["name"]] == "0", (seen["ro"], wrote)
    else:
        # QEMU 7.2's NVMe does not mark the namespace read-only (later ones
        # do), but refuses the write all the same.
        assert seen["ro"]["ro"] == "1" or ctrl == "nvme", seen["ro"]
        assert wrote[seen["ro"]["name"]] != "0", f"{ctrl}: a write to the read-only disk succeeded: {wrote}"
    for mode in ("discard", "overlay", "rw"):
        assert seen[mode]["ro"] == "0" and wrote[seen[mode]["name"]] == "0", (mode, seen[mode], wrote)
    for mode in MODES:
        img = str(tmp_path / f"{mode}.img")
        assert (sha256_file(img) != before[mode]) == (mode == "rw"), f"{ctrl} {mode}: the host's bytes"
    r = host(["qemu-img", "compare", "-f", "qcow2", "-F", "raw", str(tmp_path / "kept.qcow2"), base])
    assert r.returncode == 1, f"the overlay does not hold the guest's write: {r.stdout}"


def dry(*args, env=None):
    return host([RUN, "--dry-run", "--direct"] + list(args), env=env)


def refused(r, line):
    """R was refused with one line holding LINE, and no QEMU command printed."""
    assert r.returncode == 2 and "qemu-system" not in r.stdout, (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and line in r.stderr, r.stderr


def test_disks_the_host_uses_are_refused(loopdev, tmp_path):
    loop = loopdev("used")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    host(["mount", "-o", "ro", loop, str(mnt)], check=True)
    try:
        refused(dry("--disk", f"{loop},if=ahci"), f"{loop} is mounted on {mnt}")
        # The image a host loop device is backed by counts as that device.
        backing = host(["losetup", "-n", "-O", "BACK-FILE", loop]).stdout.strip()
        refused(dry("--disk", backing), f"{loop} is mounted on {mnt}")
        # --force-in-use: read-only or discarded, never read-write.
        r = dry("--force-in-use", "--disk", f"{loop},if=virtio-blk")
        assert r.returncode == 0 and "readonly=on" in r.stdout, r.stderr
        refused(dry("--force-in-use", "--disk", f"{loop},rw"), "never read-write")
    finally:
        host(["umount", str(mnt)])
    swap = loopdev("swap")
    host(["mkswap", "-q", swap], check=True)
    host(["swapon", swap], check=True)
    try:
        refused(dry("--disk", f"{swap},if=nvme"), f"{swap} is swap space")
    finally:
        host(["swapoff", swap])
    # The host's own root, read-write as the report had it.
    root = host(["findmnt", "-n", "-o", "SOURCE", "/"]).stdout.strip()
    if root.startswith("/dev/"):
        refused(dry("--disk", f"{root},rw,if=ahci"), " is mounted on /")
    # A free one is still given, with its mode, size and serial said.
    free = loopdev("free")
    r = dry("--disk", f"{free},if=virtio-blk")
    name = os.path.basename(free)
    assert r.returncode == 0, r.stderr
    assert f"disk 0: {free} on virtio-blk, read-only, 32 MiB, serial {name}" in r.stderr, r.stderr
    assert f"file={free},format=raw,readonly=on,cache=none,aio=native" in r.stdout, r.stdout
    assert f"serial={name}" in r.stdout, r.stdout


def test_partitions_and_holders_from_the_hosts_tables(loopdev, tmp_path):
    """Partitions mounted or held by md and dm, which this machine's kernel
    cannot make of a loop device: its sysfs and mountinfo from a tree of
    the test's own, around a real (free) loop device."""
    loop = loopdev("parts")
    name = os.path.basename(loop)
    dev = f"{os.major(os.stat(loop).st_rdev)}:{os.minor(os.stat(loop).st_rdev)}"
    cases = [("mounted", lambda h: h.mountinfo([("259:1", f"/dev/{name}p1", "/srv")]),
              f"/dev/{name}p1 is mounted on /srv"),
             ("md", lambda h: h.hold(f"{name}p2", "md127"), f"/dev/{name}p2 is held by md127"),
             ("dm", lambda h: h.hold(f"{name}p2", "dm-3", "vg0-data"), f"/dev/{name}p2 is held by dm-3 (vg0-data)"),
             ("swap", lambda h: h.write("proc/swaps", f"Filename Type\n/dev/{name}p1 partition 1 0 -2\n"),
              f"/dev/{name}p1 is swap space")]
    for case, use, line in cases:
        h = FakeHost(str(tmp_path / case))
        h.block(name, dev)
        h.block(f"{name}p1", "259:1", parent=name)
        h.block(f"{name}p2", "259:2", parent=name)
        r = dry("--disk", loop, env=h.env())
        assert r.returncode == 0, (case, r.stderr)
        use(h)
        refused(dry("--disk", loop, env=h.env()), line)
        r = dry("--force-in-use", "--disk", f"{loop},if=ahci", env=h.env())
        assert r.returncode == 0 and "snapshot=on" in r.stdout, (case, r.stderr)
        assert "writes thrown away (ahci cannot take a read-only drive)" in r.stderr, r.stderr


def test_modes_and_scsi_passthrough_command_lines(loopdev, tmp_path):
    loop = loopdev("modes")
    r = dry("--disk", f"{loop},if=nvme", "--disk", f"{loop},mode=discard",
            "--disk", f"{loop},overlay={tmp_path}/keep.qcow2", "--disk", f"{loop},rw,if=ahci")
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if ": disk " in line]
    assert [line.split(", ")[1] for line in lines] == [
        "read-only", "writes thrown away", f"writes kept in {tmp_path}/keep.qcow2", "read-write"], lines
    assert f"file={tmp_path}/keep.qcow2,format=qcow2" in r.stdout
    info = json.loads(host(["qemu-img", "info", "--output=json", f"{tmp_path}/keep.qcow2"]).stdout)
    assert info["backing-filename"] == loop, info
    # scsi-block: a host SCSI disk, its commands passed, on virtio-scsi or an HBA
    # of choice; some of them write, so only with --force-rw-scsi.
    refused(dry("--disk", f"{loop},if=scsi-block"), "cannot be read-only")
    r = dry("--force-rw-scsi", "--disk", f"{loop},if=scsi-block")
    assert r.returncode == 0 and "-device virtio-scsi-pci,id=virtioscsi0" in r.stdout, r.stderr
    assert "-device scsi-block,drive=disk0,bus=virtioscsi0.0" in r.stdout and "readonly" not in r.stdout
    r = dry("--force-rw-scsi", "--disk", f"{loop},if=scsi-block,hba=megasas")
    assert "-device megasas,id=megasas0" in r.stdout and "scsi-block,drive=disk0,bus=megasas0.0" in r.stdout
    # scsi-generic cannot be read-only: refused unless --force-rw-scsi.
    sg = str(tmp_path / "sg9")
    os.mknod(sg, stat.S_IFCHR | 0o600, os.makedev(21, 9))
    refused(dry("--disk", f"{sg},if=scsi-generic"), "cannot be read-only")
    r = dry("--force-rw-scsi", "--disk", f"{sg},if=scsi-generic")
    assert r.returncode == 0 and "-device scsi-generic,drive=disk0,bus=virtioscsi0.0" in r.stdout, r.stderr
    assert "readonly" not in r.stdout and "snapshot" not in r.stdout
    refused(dry("--force-rw-scsi", "--disk", f"{loop},if=scsi-generic"), "takes a SCSI generic device")
    # A comma in a path: written twice in --disk, as QEMU writes it, and doubled again for QEMU.
    odd = tmp_path / "a,b.img"
    shutil.copy(tmp_path / "modes.img", odd)
    r = dry("--disk", f"{str(odd).replace(',', ',,')},if=nvme", "--serial-log", f"{tmp_path}/c,d.log")
    assert r.returncode == 0 and f"file={tmp_path}/a,,b.img,format=raw" in r.stdout, r.stdout + r.stderr
    assert f"logfile={tmp_path}/c,,d.log" in r.stdout, r.stdout


def test_pci_refused_without_iommu():
    r = host([RUN, "--dry-run", "--iso", "/dev/null", "--pci", "01:00.0"])     # this machine's real /sys
    assert r.returncode != 0 and "needs an IOMMU" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr


def three_devices(h):
    """An HBA, an NVMe drive and a NIC the host parks on pci-stub (by
    driver_override), each alone in its IOMMU group but for a bridge."""
    h.pci("0000:00:01.0", "0x060400", "pcieport", "1")
    for i, (bdf, klass, drv) in enumerate([("0000:01:00.0", "0x010700", "mpt3sas"),
                                          ("0000:02:00.0", "0x010802", "nvme"),
                                          ("0000:03:00.0", "0x020000", "pci-stub")]):
        h.pci(bdf, klass, drv, str(i + 2))
    h.write(override_path(h, "0000:03:00.0"), "pci-stub\n")
    return {"0000:01:00.0": "mpt3sas", "0000:02:00.0": "nvme", "0000:03:00.0": "pci-stub"}


def override_path(h, bdf):
    return os.path.join(h.sys, "bus", "pci", "devices", bdf, "driver_override")


def overrides_back(h):
    """Every device's driver_override as the host had it: pci-stub's kept, the others none."""
    now = {bdf: open(override_path(h, bdf)).read().strip() for bdf in ("0000:01:00.0", "0000:02:00.0", "0000:03:00.0")}
    return all(v in ("", "(null)") for b, v in now.items() if b != "0000:03:00.0") and now["0000:03:00.0"] == "pci-stub"


def pci_args(devices):
    return [a for bdf in devices for a in ("--pci", bdf)]


def test_pci_plan_groups_and_disks(tmp_path):
    h = FakeHost(str(tmp_path / "h"))
    devices = three_devices(h)
    h.pci("0000:04:00.0", "0x010700", "megaraid_sas", "9")
    h.pci("0000:04:00.1", "0x020000", "ixgbe", "9")
    h.pci("0000:05:00.0", "0x010700", "ahci", "10")
    h.pci("0000:05:00.1", "0x0c0330", None, "10")      # no driver: fine to leave
    r = host([RUN, "--dry-run", "--iso", "/dev/null"] + pci_args(devices), env=h.env())
    assert r.returncode == 0, r.stderr
    assert "-machine q35" in r.stdout
    for n, bdf in enumerate(devices):
        assert f"-device pcie-root-port,id=vfioport{n},chassis={n + 1},slot={n + 1}" in r.stdout
        assert f"-device vfio-pci,host={bdf},bus=vfioport{n}" in r.stdout
        assert f"would bind {bdf} (now {devices[bdf]}) to vfio-pci" in r.stdout
    refused(host([RUN, "--dry-run", "--iso", "/dev/null", "--pci", "04:00.0"], env=h.env()),
            "also holds 0000:04:00.1 (ixgbe)")
    r = host([RUN, "--dry-run", "--iso", "/dev/null", "--pci", "05:00.0"], env=h.env())
    assert r.returncode == 0, r.stderr
    # The disks behind an HBA: mounted, refused; the host's root, always refused.
    hba = os.path.join(h.sys, "devices", "pci0000:00", "0000:01:00.0", "host0", "target0:0:0", "0:0:0:0", "block")
    h.block("sdx", "8:16", under=hba)
    h.block("sdx1", "8:17", parent="sdx")
    h.mountinfo([("8:17", "/dev/sdx1", "/data")])
    refused(host([RUN, "--dry-run", "--iso", "/dev/null", "--pci", "01:00.0"], env=h.env()),
            "0000:01:00.0 holds a disk in use: /dev/sdx1 is mounted on /data")
    h.mountinfo([("8:17", "/dev/sdx1", "/")])
    refused(host([RUN, "--dry-run", "--iso", "/dev/null", "--pci", "01:00.0", "--force-in-use"], env=h.env()),
            "0000:01:00.0 holds the host's root disk /dev/sdx")


FAKE_QEMU = """#!/bin/sh
echo "$$" > "{marker}"
exec sleep 60
"""


def runner(h, tmp_path, devices):
    """qemu/run with DEVICES passed, a stand-in QEMU that sleeps; returns
    (the runner's process, the stand-in's pid file)."""
    marker = tmp_path / "qemu.pid"
    fake = tmp_path / "qemu"
    fake.write_text(FAKE_QEMU.format(marker=marker))
    fake.chmod(0o755)
    env = dict(h.env(), EXTRESCUE_QEMU=str(fake))
    p = subprocess.Popen([RUN, "--iso", "/dev/null"] + pci_args(devices), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p, marker


def wait_file(path, timeout=20):
    end = time.monotonic() + timeout
    while not os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.05)
    return os.path.exists(path)


# A fake host and a stand-in QEMU: it boots nothing and runs no make, and
# mostly waits, so it goes beside the serial test.
@pytest.mark.beside_serial
def test_vfio_devices_come_back_on_every_way_out(tmp_path):
    vfio_all = None
    # A failure after the second of three binds: all three given back.
    with FakeHost(str(tmp_path / "fail")) as h:
        devices = three_devices(h)
        h.refuse_vfio.add("0000:03:00.0")
        p, marker = runner(h, tmp_path / "fail", devices)
        _, err = p.communicate(timeout=60)
        assert p.returncode != 0 and "0000:03:00.0 did not bind to vfio-pci" in err, err
        assert not os.path.exists(marker), "QEMU started after a failed bind"
        assert h.wait_drivers(devices) == devices, err
        assert overrides_back(h), "a driver_override was not given back"
        assert os.listdir(h.state) == [], "the state file stayed after everything came back"
    # SIGTERM while QEMU runs: QEMU stopped, all given back.
    with FakeHost(str(tmp_path / "term")) as h:
        devices = three_devices(h)
        vfio_all = {b: "vfio-pci" for b in devices}
        p, marker = runner(h, tmp_path / "term", devices)
        assert wait_file(marker), p.stderr.read() if p.poll() is not None else "QEMU never started"
        assert h.wait_drivers(vfio_all) == vfio_all
        state = json.loads(open(os.path.join(h.state, f"{p.pid}.json")).read())
        assert sorted(b for b, *_ in state["devices"]) == sorted(devices)
        qemu_pid = int(open(marker).read())
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 128 + signal.SIGTERM, err
        assert h.wait_drivers(devices) == devices, err
        assert overrides_back(h)
        assert not os.path.exists(f"/proc/{qemu_pid}"), "QEMU outlived the runner"
        assert os.listdir(h.state) == []
    # SIGKILL: nothing can run then; --vfio-restore gives them back later.
    with FakeHost(str(tmp_path / "kill")) as h:
        devices = three_devices(h)
        p, marker = runner(h, tmp_path / "kill", devices)
        assert wait_file(marker), p.communicate(timeout=60)
        assert h.wait_drivers(vfio_all) == vfio_all
        p.kill()
        p.wait()
        # QEMU dies with its runner (it would hold the devices otherwise).
        qemu_pid = int(open(marker).read())
        end = time.monotonic() + 10
        while os.path.exists(f"/proc/{qemu_pid}") and time.monotonic() < end:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{qemu_pid}"), "QEMU outlived a killed runner"
        assert h.wait_drivers(vfio_all, timeout=1) == vfio_all, "devices came back with nobody to do it"
        # The dead runner's pid, used again by a living process: still a dead runner's devices.
        state_file = os.path.join(h.state, f"{p.pid}.json")
        state = json.loads(open(state_file).read())
        state["pid"] = os.getpid()
        # Devices as a runner from before kept overrides wrote them: (bdf, driver).
        state["devices"] = [d[:2] if d[2] in ("", None) else d for d in state["devices"]]
        with open(state_file, "w") as f:
            json.dump(state, f)
        r = host([RUN, "--vfio-restore"], env=h.env())
        assert r.returncode == 0 and f"runner {os.getpid()}'s devices given back" in r.stdout, r.stdout + r.stderr
        assert h.wait_drivers(devices) == devices
        assert overrides_back(h)
        assert os.listdir(h.state) == []
        r = host([RUN, "--vfio-restore"], env=h.env())
        assert r.returncode == 0 and "nothing to give back" in r.stdout, r.stderr
