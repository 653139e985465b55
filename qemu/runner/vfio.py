"""PCI passthrough that gives the host its devices back, whatever happens
(as libvirt's managed='yes'): the whole IOMMU group is checked, the disks
behind each device are checked like --disk's, the plan is written to a state
file under /run/extrescue/vfio/ before the first unbind, each bind is
verified, and every way out (a failed bind, QEMU's exit, SIGINT, SIGTERM,
SIGHUP) gives the devices back; `qemu/run --vfio-restore` does it for a
runner that was killed outright. EXTRESCUE_SYSFS, EXTRESCUE_DEVVFIO and
EXTRESCUE_VFIO_STATE replace /sys, /dev/vfio and the state folder for tests.
Used by cli.py and build.py (--pci, --vfio-restore) and by qemu/smoke."""
import ctypes
import errno
import json
import os
import signal
import subprocess
import sys
import time

from . import hostdisk

# Drivers a device of the group may stay on: they leave it to no one on the host.
GROUP_SAFE = {"vfio-pci", "pci-stub", None}
BIND_WAIT = 10                       # seconds for a driver to take or leave a device


class VfioError(Exception):
    pass


def state_dir():
    return os.environ.get("EXTRESCUE_VFIO_STATE", "/run/extrescue/vfio")


def dev_vfio():
    return os.environ.get("EXTRESCUE_DEVVFIO", "/dev/vfio")


def full_bdf(bdf):
    return bdf if bdf.count(":") == 2 else f"0000:{bdf}"


def _dev(bdf):
    return os.path.join(hostdisk.sysfs(), "bus", "pci", "devices", bdf)


def driver_of(bdf):
    try:            # the link may go while it is read: the device is leaving its driver
        return os.path.basename(os.readlink(os.path.join(_dev(bdf), "driver")))
    except OSError:
        return None


def override_of(bdf):
    """The device's driver_override ("" when none): a device the host parks
    on pci-stub or vfio-pci this way goes back to it."""
    try:
        with open(os.path.join(_dev(bdf), "driver_override")) as f:
            v = f.read().strip()
    except OSError:
        return ""
    return "" if v == "(null)" else v


def _write(path, value):
    with open(os.path.join(hostdisk.sysfs(), path), "w") as f:
        f.write(value)


def plan(bdfs):
    """[(bdf, driver now, driver_override now)] for passing BDFS through;
    VfioError names why not."""
    groups = os.path.join(hostdisk.sysfs(), "kernel", "iommu_groups")
    if not os.path.isdir(groups) or not os.listdir(groups):
        raise VfioError("PCI passthrough needs an IOMMU, and this host has none active "
                        f"({groups} is empty): enable VT-d/AMD-Vi in the firmware and boot with "
                        "intel_iommu=on or amd_iommu=on")
    wanted = [full_bdf(b) for b in bdfs]
    root = hostdisk.root_disks()
    out = []
    for bdf in wanted:
        if not os.path.isdir(_dev(bdf)):
            raise VfioError(f"no PCI device {bdf} on this host (see lspci -D)")
        group = os.path.basename(os.readlink(os.path.join(_dev(bdf), "iommu_group")))
        for member in sorted(os.listdir(os.path.join(groups, group, "devices"))):
            with open(os.path.join(_dev(member), "class")) as f:
                klass = int(f.read().strip(), 16)
            # Bridges stay with the host; other members must be passed too or be free.
            if klass >> 8 == 0x0604 or member in wanted or driver_of(member) in GROUP_SAFE:
                continue
            raise VfioError(f"IOMMU group {group} of {bdf} also holds {member} ({driver_of(member)}); "
                            f"pass it too with --pci {member}, or use another slot")
        busy = holder(bdf, group)
        if busy:
            raise VfioError(f"{bdf} {busy}")
        disks = hostdisk.behind_pci(bdf)
        mine = sorted(set(disks) & root)
        if mine:
            raise VfioError(f"{bdf} holds the host's root disk /dev/{mine[0]}: never passed through")
        for name in disks:
            # By any name: the second port of a dual-path disk may be in use
            # through another HBA (disk-inuse, as write-stick and --disk).
            try:
                used = hostdisk.users(name)
            except hostdisk.InUseToolMissing as e:
                raise VfioError(str(e))
            if used:
                raise VfioError(f"{bdf} holds a disk in use: {used[0]}; unmount, swapoff or stop it first "
                                "(a passed controller cannot be read-only)")
        out.append((bdf, driver_of(bdf), override_of(bdf)))
    return out


# What a refusal for a device in use says to do.
ONE_GUEST = "one guest at a time; wait for it to end, or stop it"


def _other_claim(bdf):
    """The state of another runner whose state file names BDF, or None."""
    for _, saved in _runners():
        if isinstance(saved, dict) and saved["pid"] != os.getpid() and bdf in (b for b, *_ in saved["devices"]):
            return saved
    return None


def holder(bdf, group):
    """Who has BDF (of IOMMU group GROUP) now, and what to do, in words, or
    None: another runner's state file names it (live: its guest has it;
    gone: it was left on vfio-pci), or it is on vfio-pci with its group open
    (a VFIO group is opened by one program at a time: another VM)."""
    other = _other_claim(bdf)
    if other and _alive(other["pid"], other["started"]):
        return f"is held by qemu/run {other['pid']}, whose guest has it: {ONE_GUEST}"
    if other:
        return (f"was left on vfio-pci by qemu/run {other['pid']}, which is gone: `qemu/run --vfio-restore` "
                "gives it back first")
    if driver_of(bdf) != "vfio-pci":
        return None
    try:
        os.close(os.open(os.path.join(dev_vfio(), group), os.O_RDWR))
    except OSError as e:
        if e.errno == errno.EBUSY:
            return f"is on vfio-pci and another program (a VM?) has {dev_vfio()}/{group} open: {ONE_GUEST}"
    return None


def claim(devices):
    """Writes this runner's state file naming DEVICES (plan()'s), then looks
    again for another live runner naming one of them. Of two runners started
    together both write before either looks, or the later one sees the
    earlier: never do both go on. VfioError, nothing touched and the state
    file gone, when one is named."""
    os.makedirs(state_dir(), exist_ok=True)
    with open(_state_file() + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "started": _started(os.getpid()), "devices": devices}, f)
    os.rename(_state_file() + ".tmp", _state_file())
    for bdf, *_ in devices:
        other = _other_claim(bdf)
        if other and _alive(other["pid"], other["started"]):
            os.unlink(_state_file())
            raise VfioError(f"{bdf} is claimed by qemu/run {other['pid']} started at the same time: "
                            "one guest at a time; try again when it has ended")


def _wait_driver(bdf, want):
    end = time.monotonic() + BIND_WAIT
    while driver_of(bdf) != want and time.monotonic() < end:
        time.sleep(0.05)
    return driver_of(bdf) == want


def _state_file():
    return os.path.join(state_dir(), f"{os.getpid()}.json")


def _started(pid):
    """When process PID started (clock ticks after boot, /proc/PID/stat's
    22nd field), or None: with the pid, it names one process, even after the
    pid is used again."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def bind(devices, stopped=()):
    """Binds DEVICES (plan()'s, claim()ed) to vfio-pci; VfioError when one
    does not bind (the caller gives all back), _Stop when a signal came
    (STOPPED holds it)."""
    for bdf, drv, _ in devices:
        if stopped:
            raise _Stop(stopped[0])
        if drv == "vfio-pci":
            continue
        _write(f"bus/pci/devices/{bdf}/driver_override", "vfio-pci")
        if drv:
            _write(f"bus/pci/devices/{bdf}/driver/unbind", bdf)
            if not _wait_driver(bdf, None):
                raise VfioError(f"{bdf} did not leave {drv}")
        _write("bus/pci/drivers_probe", bdf)
        if not _wait_driver(bdf, "vfio-pci"):
            raise VfioError(f"{bdf} did not bind to vfio-pci (now {driver_of(bdf) or 'no driver'}); "
                            "is the vfio-pci module loaded?")
        group = os.path.basename(os.readlink(os.path.join(_dev(bdf), "iommu_group")))
        if not os.path.exists(os.path.join(dev_vfio(), group)):
            raise VfioError(f"{bdf} is on vfio-pci but {dev_vfio()}/{group} is missing")


def restore(devices, state=None):
    """Gives each of DEVICES back to the driver and driver_override it had;
    returns the lines of what could not be given back (empty: all back,
    state file removed)."""
    failed = []
    for bdf, drv, override in devices:
        if drv == "vfio-pci" or not os.path.isdir(_dev(bdf)):
            continue
        try:
            # The probe binds to the driver it had (the override names it
            # for that moment), then the override it had is written back.
            _write(f"bus/pci/devices/{bdf}/driver_override", (drv or override or "") + "\n")
            if driver_of(bdf) not in (drv, None):
                _write(f"bus/pci/devices/{bdf}/driver/unbind", bdf)
                _wait_driver(bdf, None)
            if drv and driver_of(bdf) is None:
                _write("bus/pci/drivers_probe", bdf)
            back = _wait_driver(bdf, drv)
            _write(f"bus/pci/devices/{bdf}/driver_override", (override or "") + "\n")
            if not back:
                failed.append(f"{bdf} is on {driver_of(bdf) or 'no driver'}, not back on {drv}")
        except OSError as e:
            failed.append(f"{bdf}: {e.strerror}")
    if not failed:
        try:
            os.unlink(state or _state_file())
        except FileNotFoundError:
            pass
    return failed


def _alive(pid, started):
    """Whether the runner PID that started at STARTED still runs (a new
    process with its old pid is not it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return started is None or _started(pid) == started


def _runners():
    """(path, {"pid", "started", "devices"}) of each runner's state file, or
    (path, why it is unreadable)."""
    folder = state_dir()
    files = sorted(f for f in os.listdir(folder) if f.endswith(".json")) if os.path.isdir(folder) else []
    for name in files:
        path = os.path.join(folder, name)
        try:
            with open(path) as f:
                saved = json.load(f)
            # A state file from before overrides were kept has two fields a device.
            yield path, {"pid": int(saved["pid"]), "started": saved.get("started"),
                         "devices": [(str(b), d, str(rest[0] or "") if rest else "")
                                     for b, d, *rest in saved["devices"]]}
        except (OSError, ValueError, KeyError, TypeError) as e:
            yield path, str(e)


def restore_left():
    """`qemu/run --vfio-restore`: gives back the devices of every runner
    that is gone. Returns the exit status."""
    folder = state_dir()
    status, files = 0, 0
    for path, saved in _runners():
        files += 1
        if not isinstance(saved, dict):
            print(f"qemu/run: {path} is unreadable ({saved}); give its devices back by hand", file=sys.stderr)
            status = 1
            continue
        pid, started, devices = saved["pid"], saved["started"], saved["devices"]
        if _alive(pid, started) and pid != os.getpid():
            print(f"qemu/run: runner {pid} still runs with {', '.join(b for b, *_ in devices)}; left alone")
            continue
        failed = restore(devices, path)
        for line in failed:
            print(f"qemu/run: {line}", file=sys.stderr)
        if failed:
            status = 1
        else:
            print(f"qemu/run: runner {pid}'s devices given back: "
                  + ", ".join(f"{b} to {d or 'no driver'}" for b, d, _ in devices))
    if not files:
        print(f"qemu/run: nothing to give back ({folder} holds no runner's devices)")
    return status


class _Stop(Exception):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _die_with_parent():
    """In QEMU's child before exec: killed when the runner dies, even by
    SIGKILL, so no QEMU holds a device that --vfio-restore gives back."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)      # PR_SET_PDEATHSIG


def run(devices, argv):
    """Binds DEVICES, runs QEMU (ARGV) and gives them back on every way out;
    returns QEMU's exit status (128+N after signal N). A signal is only
    noted by its handler (nothing is raised at a bad moment); the loops here
    look at it."""
    stopped = []

    def note(signum, frame):
        stopped.append(signum)

    try:
        claim(devices)
    except (VfioError, OSError) as e:
        print(f"qemu/run: {e}", file=sys.stderr)
        return 2
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, note)
    qemu, status = None, 1
    try:
        bind(devices, stopped)
        if not stopped:
            # close_fds=False keeps --mok's variable store open for QEMU.
            qemu = subprocess.Popen(argv, close_fds=False, preexec_fn=_die_with_parent)
        while qemu and qemu.poll() is None and not stopped:
            try:
                qemu.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
        status = qemu.returncode if qemu and qemu.returncode is not None else 1
    except _Stop:
        pass
    except (VfioError, OSError) as e:
        print(f"qemu/run: {e}; giving the devices back", file=sys.stderr)
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        if stopped:
            status = 128 + stopped[0]
            print(f"qemu/run: signal {stopped[0]}: stopping QEMU and giving the devices back", file=sys.stderr)
        if qemu and qemu.poll() is None:
            qemu.terminate()
            try:
                qemu.wait(timeout=30)
            except subprocess.TimeoutExpired:
                qemu.kill()
                qemu.wait()
        failed = restore(devices)
        for line in failed:
            print(f"qemu/run: {line}; `qemu/run --vfio-restore` tries again", file=sys.stderr)
    return status
