"""The QEMU command line being built (Machine: its arguments, one adapter
per controller kind, each disk's -drive and -device), and a disk's
overlay=FILE.qcow2, checked to sit over that very disk. build.py fills a
Machine step by step; firmware.py and network.py add to it. qv() quotes a
value for QEMU's options wherever a path goes in."""
import json
import os
import stat
import subprocess

from . import hostdisk
from .controllers import CONTROLLERS, adapter_of
from .say import die


def qv(value):
    """VALUE as a QEMU option value: a comma in it doubled (QEMU's escape),
    so a path with a comma names that path and adds no option."""
    return str(value).replace(",", ",,")


class Machine:
    def __init__(self):
        self.args = []
        self.hbas = {}
        self.on = {}            # controller -> disks attached to it so far

    def add(self, *a):
        self.args.extend(a)

    def hba(self, kind, dev):
        """One adapter per controller kind, created on first use."""
        if kind not in self.hbas:
            hid = f"{kind.replace('-', '')}0"
            self.add("-device", f"{dev},id={hid}")
            self.hbas[kind] = hid
        return self.hbas[kind]

    def disk(self, n, d, boot=False):
        """Disk N (D, a parsed and checked spec) on its controller; BOOT: the first to boot."""
        drive = f"disk{n}"
        ctrl = CONTROLLERS[d["if"]]
        host_dev = hostdisk.block_name(d["path"]) is not None
        self.add("-drive", drive_value(drive, d, host_dev))
        extra = ",bootindex=0" if boot else ""
        sizes = (int(d["blocksize"]),) * 2 if d["blocksize"] else hostdisk.block_sizes(d["path"])
        if sizes and ctrl.sizes and sizes != (512, 512):
            # A host disk's own sector sizes (a 4Kn drive stays 4Kn in the guest).
            extra += f",logical_block_size={sizes[0]},physical_block_size={sizes[1]}"
        # A host disk keeps its own name, so the guest finds it in /dev/disk/by-id.
        serial = d["serial"] or hostdisk.default_serial(n, d["path"])
        d["serial"] = serial
        slot = self.on.get(d["if"], 0)
        if ctrl.limit and slot >= ctrl.limit[0]:
            die(ctrl.limit[1])
        self.on[d["if"]] = slot + 1
        adapter = adapter_of(d)
        bus = self.hba(*adapter) if adapter else None
        for dev in ctrl.devices:
            self.add("-device", dev.format(drive=drive, bus=bus, slot=slot, n=n, serial=qv(serial), extra=extra))


def drive_value(drive, d, host_dev):
    """The -drive value of disk D, id DRIVE (HOST_DEV: a host block device)."""
    if d["overlay"]:
        overlay(d)
        opts = f"if=none,id={drive},file={qv(d['overlay'])},format=qcow2"
    elif d["logwrites"]:
        # Every write, flush and FUA in order, in dm-log-writes' format
        # (QEMU's blklogwrites): a power cut replayed at each flush.
        # QEMU opens the log, it does not create it: cli.run() does.
        opts = (f"if=none,id={drive},format=raw,file.driver=blklogwrites,file.file.driver=file,"
                f"file.file.filename={qv(d['path'])},file.log.driver=file,file.log.filename={qv(d['logwrites'])}")
    elif d["blkdebug"]:
        # QEMU's fault injection under the disk (errors at chosen sectors),
        # to see what a driver and our tools make of a failing disk.
        opts = (f"if=none,id={drive},format=raw,file.driver=blkdebug,file.config={qv(d['blkdebug'])},"
                f"file.image.filename={qv(d['path'])}")
        opts += ",readonly=on" if d["mode"] == "ro" else ",snapshot=on" if d["mode"] == "discard" else ""
    else:
        opts = f"if=none,id={drive},file={qv(d['path'])},format={d['format']}"
        if d["mode"] == "ro":
            opts += ",readonly=on"
        elif d["mode"] == "discard":
            opts += ",snapshot=on"
    # A host disk: the host's page cache out of the way, as on the real thing.
    cache = d["cache"] or ("none" if host_dev else None)
    if cache:
        opts += f",cache={cache}"
        if cache == "none" and host_dev:
            opts += ",aio=native"
    return opts


def overlay(d):
    """overlay=FILE: a qcow2 over the disk that takes the guest's writes and
    outlives the run (qemu-img commit FILE writes them to the disk later).
    An existing one is taken only when its backing file is the disk given:
    another's would reach the guest, and its commit would write there."""
    if os.path.exists(d["overlay"]):
        backing = overlay_backing(d["overlay"])
        if not same_storage(backing, d["path"]):
            die(f"overlay={d['overlay']}: its backing file is {backing or 'none'}, not the disk given "
                f"({d['path']}); name that disk with it, or a new overlay file")
        return
    r = subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", os.path.abspath(d["path"]),
                        "-F", d["format"], d["overlay"]], capture_output=True, text=True)
    if r.returncode != 0:
        die(f"overlay={d['overlay']}: qemu-img create failed: {r.stderr.strip()}")


def overlay_backing(path):
    """The backing file a qcow2 names, as an absolute path, or None."""
    r = subprocess.run(["qemu-img", "info", "--output=json", "-U", path], capture_output=True, text=True)
    if r.returncode != 0:
        die(f"overlay={path}: qemu-img info failed: {r.stderr.strip()}")
    info = json.loads(r.stdout)
    if info.get("format") != "qcow2":
        die(f"overlay={path} is {info.get('format')}, not a qcow2 overlay; name a new file")
    backing = info.get("full-backing-filename") or info.get("backing-filename")
    if backing and not os.path.isabs(backing):
        backing = os.path.join(os.path.dirname(os.path.abspath(path)), backing)
    return backing


def same_storage(a, b):
    """Whether paths A and B are one disk: the same device number for
    block devices, the same file (device and inode) otherwise."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, TypeError):
        return False
    if stat.S_ISBLK(sa.st_mode) or stat.S_ISBLK(sb.st_mode):
        return stat.S_ISBLK(sa.st_mode) and stat.S_ISBLK(sb.st_mode) and sa.st_rdev == sb.st_rdev
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)
