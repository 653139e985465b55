"""What qemu/run needs to know of host block devices: their names, sizes
and sector sizes, and whether the host uses them by any name, so that the
guest is never handed a disk the host itself is using. That last answer
is disk-inuse's (src/lib/inuse.c), the one write-stick and iobench give too:
mounted, swap, holders, the kernel's exclusive open, and every other name
of the same storage (a loop device over the same file, the same wwid,
NGUID or EUI). The host's tables are read from EXTRESCUE_PROCFS and
EXTRESCUE_SYSFS (default /proc and /sys), so tests can give a tree of
their own. Used by diskspec.py, machine.py and vfio.py, and by qemu/smoke's
views.py for the host's side of each disk."""
import glob
import os
import platform
import re
import shutil
import stat
import subprocess

from .tree import TOP


def procfs():
    return os.environ.get("EXTRESCUE_PROCFS", "/proc")


def sysfs():
    return os.environ.get("EXTRESCUE_SYSFS", "/sys")


def _read(path, limit=1 << 20):
    try:
        with open(path, errors="replace") as f:
            return f.read(limit)
    except OSError:
        return ""


def _unescape(field):
    """mountinfo's octal escapes (\\040 for a blank) decoded."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and len(field[i + 1:i + 4]) == 3 and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts():
    """[(major:minor, source, mount point)] of the host's mounts."""
    found = []
    for line in _read(os.path.join(procfs(), "self", "mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if len(f) >= 5 and len(r) >= 2:
            found.append((f[2], _unescape(r[1]), _unescape(f[4])))
    return found


def block_name(path):
    """The kernel's name (sdb, sdb2, nvme0n1) of block device PATH, or None
    when PATH is not a block device."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISBLK(st.st_mode):
        return None
    link = os.path.join(sysfs(), "dev", "block", f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
    return os.path.basename(os.path.realpath(link)) if os.path.exists(link) else os.path.basename(path)


def _block_devices():
    """[(name, its sysfs folder)] of every block device, partitions included."""
    cls = os.path.join(sysfs(), "class", "block")
    return [(n, os.path.join(cls, n)) for n in (sorted(os.listdir(cls)) if os.path.isdir(cls) else [])]


def sg_block(path):
    """The block device (sdb) behind SCSI generic device PATH (/dev/sg1):
    None when it has none (a tape, an enclosure), False when PATH is not a
    SCSI generic device."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISCHR(st.st_mode):
        return False
    block = os.path.join(sysfs(), "class", "scsi_generic", os.path.basename(os.path.realpath(path)),
                         "device", "block")
    names = sorted(os.listdir(block)) if os.path.isdir(block) else []
    return names[0] if names else None


OUT_ARCH = {"x86_64": "x86_64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


class InUseToolMissing(Exception):
    pass


def disk_inuse_tool():
    """The disk-inuse program: EXTRESCUE_DISK_INUSE, else the build's
    out/ARCH/disk-inuse beside write-stick, else one on PATH."""
    named = os.environ.get("EXTRESCUE_DISK_INUSE")
    out = os.path.join(TOP, "out")
    # Each architecture's out/ has a build for this host; this host's first.
    built = ([os.path.join(os.environ["OUT"], "disk-inuse")] if os.environ.get("OUT") else []) + \
        [os.path.join(out, OUT_ARCH, "disk-inuse")] + sorted(glob.glob(os.path.join(out, "*", "disk-inuse")))
    tool = named or next((b for b in built if os.access(b, os.X_OK)), None) or shutil.which("disk-inuse")
    if not tool or not os.access(tool, os.X_OK):
        raise InUseToolMissing(f"disk-inuse is missing ({named or built[0]}): make builds it; it decides whether "
                               "a host disk is in use by any of its names")
    return tool


def _ask(args):
    tool = disk_inuse_tool()
    try:
        r = subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return [f"{tool} could not tell whether {args[-1]} is in use ({e})"]
    if r.returncode == 0:
        return []
    if r.returncode == 1:
        return r.stdout.splitlines()
    # A device it cannot look at counts as in use: refused, with its reason.
    return [r.stderr.strip().removeprefix("disk-inuse: ") or f"disk-inuse failed ({r.returncode})"]


def users(name):
    """What uses block device NAME (a kernel name), one of its partitions, or
    another name of the same storage, as short phrases; empty when nothing."""
    return _ask(["--name", name])


def users_of_path(path):
    """The same for a block device or image file by path; the phrases name
    it as given."""
    return _ask([path])


def _whole_disks(name, seen=None):
    """The whole disks under NAME: its own disk for a partition, the slaves
    of an md or dm device all the way down."""
    seen = seen if seen is not None else set()
    if name in seen:
        return set()
    seen.add(name)
    base = os.path.join(sysfs(), "class", "block", name)
    if os.path.exists(os.path.join(base, "partition")):
        return {os.path.basename(os.path.dirname(os.path.realpath(base)))}
    slaves = os.path.join(base, "slaves")
    below = sorted(os.listdir(slaves)) if os.path.isdir(slaves) else []
    if not below:
        return {name}
    disks = set()
    for s in below:
        disks |= _whole_disks(s, seen)
    return disks


def root_disks():
    """The whole disks the host's root filesystem lives on."""
    for majmin, source, where in mounts():
        if where == "/":
            link = os.path.join(sysfs(), "dev", "block", majmin)
            if os.path.exists(link):
                return _whole_disks(os.path.basename(os.path.realpath(link)))
            name = block_name(source) if source.startswith("/dev/") else None
            return _whole_disks(name) if name else set()
    return set()


def block_sizes(path):
    """(logical, physical) sector sizes of host block device PATH, or None."""
    name = block_name(path)
    if not name:
        return None
    q = os.path.join(sysfs(), "class", "block", name)
    if os.path.exists(os.path.join(q, "partition")):
        q = os.path.dirname(os.path.realpath(q))
    sizes = [_read(os.path.join(q, "queue", f)).strip() for f in ("logical_block_size", "physical_block_size")]
    return tuple(int(x) for x in sizes) if all(x.isdigit() for x in sizes) else None


def default_serial(n, path):
    """The serial qemu/run gives disk N: a host device's own name (the guest
    finds /dev/sdb as /dev/disk/by-id/*-sdb), an image's number."""
    if block_name(path):
        return os.path.basename(path)[-20:]
    return f"XR{n:04d}"


def size_of(path):
    """Bytes of a disk image or block device (from sysfs for a device, which
    needs no open)."""
    name = block_name(path)
    sectors = _read(os.path.join(sysfs(), "class", "block", name, "size")).strip() if name else ""
    if sectors.isdigit():
        return int(sectors) * 512
    return os.path.getsize(path)


def behind_pci(bdf):
    """Names of the block devices (disks and partitions) behind PCI device BDF:
    those whose sysfs path lies under the device's."""
    dev = os.path.realpath(os.path.join(sysfs(), "bus", "pci", "devices", bdf))
    names = []
    for name, folder in _block_devices():
        if os.path.realpath(folder).startswith(dev + os.sep):
            # With NVMe multipath the controller holds the hidden path node
            # nvme0c0n1; the disk the host uses is the head, nvme0n1.
            head = re.fullmatch(r"nvme(\d+)c\d+n(\d+)", name)
            names.append(f"nvme{head.group(1)}n{head.group(2)}" if head else name)
    return sorted(set(names))
