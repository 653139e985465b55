"""PCI passthrough for real: qemu/run and qemu/smoke in a guest (L1, Debian
12's kernel, tests/nested.py) whose emulated Intel IOMMU gives its vfio-pci
a real IOMMU group, handing one of QEMU's storage controllers with a disk of
this host to our image (L2). Each controller of the matrix passes every
check of smoke, reads the host's bytes, and is on its L1 driver again
afterwards; the fault paths (a runner killed while L2 boots, a group shared
with a device in use, L1's own mounted disk, a second run for a held
device) are refused or undone on a real binding. megasas runs in make test,
the whole matrix under make test-vfio. A test that cannot reach L2 fails."""
import hashlib
import json
import os
import re
import shlex
import time

import pytest

import nested
from harness import LOGS, RAW_INITRD, TOP, _made_before_image, host, scaled

BDF = nested.BDF
# Seconds smoke waits for L2 (stretched for a loaded host, as every wait is).
SMOKE_SECONDS = 900
DISK_SECONDS = 300
# Each controller's disk has a size of its own, so a mix-up shows.
DISK_MIB = {"megasas": 72, "lsi53c895a": 76, "nvme": 80, "ahci": 84}
# How L1's kernel can reset each controller (sysfs reset_method): QEMU's
# NVMe has FLR; the others, alone on the root bus, nothing.
RESET = {"megasas": [], "lsi53c895a": [], "nvme": ["flr"], "ahci": []}
FIGURES = os.path.join(LOGS, "vfio-figures.tsv")
# Each line of the figures says which run it is from.
RUN = time.strftime("%Y-%m-%dT%H:%M:%S")
# L1's kernel (Debian 12's 6.1) warns when sym53c8xx lets go of the chip:
# it frees DMA memory with interrupts off. A known upstream fault of the
# middle guest, not of what is tested.
L1_KNOWN = {"lsi53c895a": re.compile(r"WARNING: CPU: \d+ PID: \d+ at kernel/dma/mapping\.c:\d+ dma_free_attrs")}
L1_TROUBLE = r"WARNING: CPU: |BUG: |Oops: |general protection fault"


def ends(path):
    """sha256 of the first and the last MiB of PATH."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        first = hashlib.sha256(f.read(1 << 20)).hexdigest()
        f.seek(size - (1 << 20))
        return first, hashlib.sha256(f.read(1 << 20)).hexdigest()


def disk_image(path, mib):
    """A raw disk of MIB MiB, random in its first and last MiB (sparse between)."""
    with open(path, "wb") as f:
        f.write(os.urandom(1 << 20))
        f.seek((mib - 1) << 20)
        f.write(os.urandom(1 << 20))
    return str(path)


@pytest.fixture
def l1(request):
    """Factory: l1(name, qemu args) starts the middle guest; every one is
    killed at the end, and its log kept when the test failed."""
    why = nested.built()
    if why:
        pytest.fail(why)
    made = []

    def start(name, args):
        g = nested.L1(name, args).start()
        made.append(g)
        return g
    yield start
    failed = getattr(request.node, "rep_call", None) is None or request.node.rep_call.failed
    for g in made:
        g.kill()
        if not failed and os.path.exists(g.log_path):
            os.unlink(g.log_path)


def driver(g, bdf):
    """(L1's driver of BDF or "-", its driver_override)."""
    out = g.check(f"d=/sys/bus/pci/devices/{bdf}; if [ -e $d/driver ]; then basename \"$(readlink $d/driver)\"; "
                  "else echo -; fi; cat $d/driver_override").split()
    return tuple(out[-2:])


def disks_behind(g, bdf, want, seconds=30):
    """The disks L1 sees behind BDF, waited for until there are WANT (a
    controller given back scans its bus again)."""
    listing = (f"for b in /sys/block/*; do case $(readlink -f $b) in */{bdf}/*) echo ${{b##*/}};; esac; done")
    out = g.check(f"for i in $(seq {seconds * 2}); do [ $({listing} | wc -l) -ge {want} ] && break; sleep 0.5; "
                  f"done; {listing}", timeout=seconds + 30)
    return out.split()


def smoke_command(json_path):
    # A guest in a guest under TCG runs each program tens of times slower than
    # a machine does: the disk's bound (110 s by default, --seconds 1) is
    # stretched to 300 s, so a slow battery is not taken for a stalled one.
    args = ["--smp", "1", "--mem", "512", "--seconds", "1", "--timeout", str(round(scaled(SMOKE_SECONDS))),
            "--disk-timeout", str(round(scaled(DISK_SECONDS))), "--json", json_path]
    # The uncompressed initramfs, as the suite's other direct boots (harness.py).
    extra = ["--", "--initrd", RAW_INITRD] if _made_before_image(RAW_INITRD) else []
    return f"cd {shlex.quote(TOP)} && qemu/smoke --pci {BDF} " + " ".join(shlex.quote(a) for a in args + extra)


@pytest.mark.parametrize("ctrl", [pytest.param(c, marks=[] if c == "megasas" else [pytest.mark.vfio_matrix])
                                  for c in nested.CONTROLLERS])
def test_smoke_through_vfio_in_a_nested_guest(l1, tmp_path, ctrl):
    img = disk_image(tmp_path / "disk.img", DISK_MIB[ctrl])
    first, last = ends(img)
    l1_driver = nested.CONTROLLERS[ctrl][0]
    g = l1(f"vfio-{ctrl}", nested.qemu_args(ctrl, img, f"XR{ctrl.upper()[:6]}"))
    l1_boot = g.wait_shell()
    assert driver(g, BDF) == (l1_driver, "(null)")
    assert len(disks_behind(g, BDF, 1)) == 1, f"L1's {l1_driver} shows no disk behind {BDF}"

    status, out = g.run(smoke_command("/tmp/smoke.json"), timeout=SMOKE_SECONDS + 120)
    assert status == 0, f"qemu/smoke --pci {BDF} in L1 exited {status}:\n{out[-3000:]}"
    result = json.loads(g.check("cat /tmp/smoke.json"))
    assert result["passed"] is True and len(result["disks"]) == 1, result
    assert result["guest_kernel_trouble"] == [], result["guest_kernel_trouble"]
    d = result["disks"][0]
    # Checked against L1's own read of the disk before it was passed, and
    # here against the image's bytes on this host.
    assert d["host"] and d["host"]["path"].startswith("/dev/") and d["host"]["pci"] == BDF, d
    assert all(c["ok"] for c in d["checks"].values()), d["checks"]
    assert d["guest"]["size"] == DISK_MIB[ctrl] << 20, d["guest"]
    assert (d["guest"]["first_mib"], d["guest"]["last_mib"]) == (first, last), "L2 read other bytes than the host wrote"
    assert f"{l1_driver} " in d["checks"]["driver"]["detail"], d["checks"]["driver"]
    assert d["guest"]["controller"] != "-" and d["checks"]["found"]["ok"]
    # Its interrupts reach L2 through L1's IOMMU (remapped) and QEMU's VFIO.
    assert re.fullmatch(r"(MSI-X \d+ vectors|MSI \d+ vectors|INTx \(irq \d+\)), [1-9]\d* delivered",
                        d["guest"]["irq"]), d["guest"]
    # How the device is reset, one line of the report.
    (pci,) = result["pci"]
    assert pci["bdf"] == BDF and pci["reset"] == RESET[ctrl], pci
    if RESET[ctrl]:
        assert f"{BDF}: reset by {RESET[ctrl][0]}" in out, out[-2000:]
    else:
        assert re.search(rf"{BDF}: no reset mechanism \(.*QEMU warned \d+ times", out), out[-2000:]
        assert pci["qemu_reset_warnings"] > 0, pci
    # Back on L1's driver, the override as it was, the disk seen again.
    assert driver(g, BDF) == (l1_driver, "(null)")
    assert len(disks_behind(g, BDF, 1)) == 1, f"{BDF} is back on {l1_driver} but L1 sees no disk behind it"
    assert ends(img) == (first, last)
    os.makedirs(LOGS, exist_ok=True)
    # What L1's kernel said about the IOMMU, interrupt remapping and vfio-pci,
    # kept beside the figures.
    said = g.check("dmesg | grep -E 'DMAR|vfio-pci|remap|reset' | tail -60")
    warned = g.check(f"dmesg | grep -E '{L1_TROUBLE}' || true")
    with open(os.path.join(LOGS, f"vfio-{ctrl}-l1-kernel.txt"), "w") as f:
        f.write(said + warned)
    # Nor did L1's kernel warn or oops, but as it is known to.
    trouble = [line for line in warned.splitlines() if re.search(L1_TROUBLE, line)
               and not (ctrl in L1_KNOWN and L1_KNOWN[ctrl].search(line))]
    assert not trouble, f"L1's kernel: {trouble}"
    with open(FIGURES, "a") as f:
        f.write(f"{RUN}\t{ctrl}\tL1 boot {l1_boot:.1f} s\tL2 kernel to disks scanned {result['guest_boot_seconds']} s"
                f"\tsmoke {result['seconds']} s\t{d['guest']['irq']}\treset {', '.join(pci['reset']) or 'none'}"
                f" (QEMU warned {pci['qemu_reset_warnings']} times)\n")


def test_vfio_fault_paths_on_a_real_binding(l1, tmp_path):
    img = disk_image(tmp_path / "disk.img", DISK_MIB["megasas"])
    own = str(tmp_path / "own.img")
    host(["mkfs.ext4", "-q", "-F", own, "32M"], check=True)
    group_disk = disk_image(tmp_path / "group.img", 20)
    group_other = disk_image(tmp_path / "other.img", 24)
    g = l1("vfio-faults", nested.qemu_args("megasas", img, "XRFAULT", own_disk=own,
                                           group_disk=group_disk, group_other=group_other))
    g.wait_shell()
    g.check(f"cd {shlex.quote(TOP)}")

    # L1's own disk, mounted: its controller is not handed over.
    vd = g.check("for b in /sys/block/vd*; do [ \"$(cat $b/serial)\" != l1own ] || echo ${b##*/}; done").strip()
    g.check(f"mkdir -p /tmp/own && mount /dev/{vd} /tmp/own")
    status, out = g.run(f"qemu/run --direct --pci {nested.OWN_DISK_BDF} 2>&1")
    assert status != 0 and re.search(rf"qemu/run: {nested.OWN_DISK_BDF} holds a disk in use: /dev/{vd} is mounted on /tmp/own", out), out
    assert driver(g, nested.OWN_DISK_BDF) == ("virtio-pci", "(null)")

    # A group shared with a device L1 uses: refused, both named.
    status, out = g.run(f"qemu/run --direct --pci {nested.GROUP_BDF} 2>&1")
    assert status != 0 and re.search(
        rf"IOMMU group \d+ of {nested.GROUP_BDF} also holds {nested.GROUP_OTHER} \(virtio-pci\)", out), out
    assert driver(g, nested.GROUP_BDF) == ("megaraid_sas", "(null)")

    # A runner killed outright while its guest boots.
    g.check(f"qemu/run --direct --pci {BDF} --serial-log /tmp/l2.log </dev/null >/tmp/run.out 2>&1 & "
             "echo $! > /tmp/run.pid")
    pid = g.check("cat /tmp/run.pid").strip()
    # The image's kernel is quiet: its first line (TSC calibration) says it runs.
    booting = g.check("for i in $(seq 240); do [ -s /tmp/l2.log ] && break; sleep 0.5; done; "
                      "[ -s /tmp/l2.log ] && echo booting || cat /tmp/run.out", timeout=200)
    assert booting.strip() == "booting", f"L2 never started booting: {booting}"
    assert driver(g, BDF) == ("vfio-pci", "vfio-pci")
    group = g.check(f"basename $(readlink /sys/bus/pci/devices/{BDF}/iommu_group)").strip()
    g.check(f"test -c /dev/vfio/{group}")
    # A second run for the same device, while the first holds it.
    status, out = g.run(f"qemu/run --direct --pci {BDF} 2>&1")
    assert status != 0 and f"{BDF} is held by qemu/run {pid}, whose guest has it" in out, out
    g.check(f"kill -9 {pid}")
    gone = g.check("for i in $(seq 60); do grep -qs qemu-system /proc/[0-9]*/comm || break; sleep 0.5; done; "
                   "grep -ls qemu-system /proc/[0-9]*/comm | wc -l")
    assert gone.strip() == "0", "L2's QEMU outlived its killed runner"
    assert driver(g, BDF) == ("vfio-pci", "vfio-pci"), "the killed runner's device should still be on vfio-pci"
    g.check(f"test -s /run/extrescue/vfio/{pid}.json")
    # Left on vfio-pci by a runner that is gone: not handed out again before it is given back.
    status, out = g.run(f"qemu/run --direct --pci {BDF} 2>&1")
    assert status != 0 and re.search(rf"{BDF} was left on vfio-pci by qemu/run {pid}, which is gone: "
                                     r"`qemu/run --vfio-restore` gives it back first", out), out
    status, out = g.run("qemu/run --vfio-restore 2>&1")
    assert status == 0 and f"qemu/run: runner {pid}'s devices given back: {BDF} to megaraid_sas" in out, out
    assert driver(g, BDF) == ("megaraid_sas", "(null)")
    assert len(disks_behind(g, BDF, 1)) == 1
    status, out = g.run("qemu/run --vfio-restore 2>&1")
    assert status == 0 and "qemu/run: nothing to give back" in out, out
    assert driver(g, BDF) == ("megaraid_sas", "(null)")
    g.poweroff()
