"""Which host block devices are in use, so that qemu/run never hands the
guest a disk the host itself is using: mounted, swapped on, or built upon
by md, device-mapper (LVM, LUKS, multipath) or bcache, the disk or any of
its partitions. The host's tables are read from EXTRESCUE_PROCFS and
EXTRESCUE_SYSFS (default /proc and /sys), so tests can give a tree of their
own; the kernel's own word (an O_EXCL open) is asked as well."""
import errno
import os
import re
import stat


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


def swaps():
    """Names (as in /dev) of the block devices the host swaps on."""
    names = set()
    for line in _read(os.path.join(procfs(), "swaps")).splitlines()[1:]:
        f = line.split()
        if f and f[1:2] == ["partition"]:
            names.add(os.path.basename(_unescape(f[0])))
    return names


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


def loop_over(path):
    """The host loop device backed by image file PATH, or None."""
    if not os.path.isfile(path):
        return None
    real = os.path.realpath(path)
    for name, folder in _block_devices():
        if name.startswith("loop") and _read(os.path.join(folder, "loop", "backing_file")).strip() == real:
            return name
    return None


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


def _dev_of(name):
    return _read(os.path.join(sysfs(), "class", "block", name, "dev")).strip()


def partitions(name):
    """NAME and the names of its partitions."""
    base = os.path.join(sysfs(), "class", "block", name)
    names = [name]
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return names
    return names + [e for e in entries if os.path.exists(os.path.join(base, e, "partition"))]


def _holder_text(holder):
    dm = _read(os.path.join(sysfs(), "class", "block", holder, "dm", "name")).strip()
    if dm:
        return f"{holder} ({dm})"
    return holder


def users(name):
    """What uses block device NAME or one of its partitions, as short
    phrases ("/dev/sdb2 is mounted on /srv"); empty when nothing does."""
    found = []
    table, swapped = mounts(), swaps()
    for part in partitions(name):
        dev = _dev_of(part)
        for majmin, source, where in table:
            # By number, and by name for filesystems that show an anonymous
            # device number (btrfs).
            if (dev and majmin == dev) or (source.startswith("/dev/") and
                                           part in (os.path.basename(source), block_name(source))):
                found.append(f"/dev/{part} is mounted on {where}")
                break
        if part in swapped:
            found.append(f"/dev/{part} is swap space")
        holders = os.path.join(sysfs(), "class", "block", part, "holders")
        held = sorted(os.listdir(holders)) if os.path.isdir(holders) else []
        if held:
            found.append(f"/dev/{part} is held by {', '.join(_holder_text(h) for h in held)}")
    return found


def exclusive_refusal(path):
    """The kernel's answer to an exclusive open of PATH: None when it grants
    it (nothing mounts or claims the device), else the reason."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.EBUSY:
            return f"{path} is in use by the host (the kernel refused an exclusive open)"
        return f"{path} cannot be opened: {e.strerror}"
    os.close(fd)
    return None


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
