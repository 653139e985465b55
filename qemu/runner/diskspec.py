"""--disk PATH[,if=CTRL][,mode=ro|rw|discard]...: the spec parsed into a
dict, checked on its own (parse_disk, check_write_log) and against the host
(check_host_disk: a disk the host uses, SCSI passthrough), and the mode the
disk gets, in words. build.py attaches what it returns; qemu/smoke parses
its --disk with parse_disk too, and its checks ask given_mode."""
import os
import stat

from . import hostdisk
from .controllers import CONTROLLERS, NO_READONLY, PASS_HBAS, SCSI_PASS
from .say import die

MODES = ("ro", "rw", "discard")
# cache=none (O_DIRECT on the host) makes a guest's fsync reach the host's
# disk, which benchmarks need; QEMU's default writeback stops at its page cache.
CACHE_MODES = ("none", "writeback", "writethrough", "directsync", "unsafe")
# dm-log-writes' magic, first in a write log's superblock.
LOG_MAGIC = (0x6A736677736872).to_bytes(8, "little")


def parse_disk(spec):
    """PATH[,if=CTRL][,mode=ro|rw|discard][,rw][,overlay=FILE.qcow2][,hba=H][,format=F]
    [,blocksize=N][,serial=S][,cache=MODE][,blkdebug=RULES][,logwrites=LOG]; a
    comma inside a path is written twice, as QEMU's own options write it."""
    parts = [f.replace("\0", ",") for f in spec.replace(",,", "\0").split(",")]
    disk = {"path": parts[0], "if": "virtio-blk", "mode": "ro", "format": "raw", "overlay": None, "blkdebug": None,
            "logwrites": None, "blocksize": None, "serial": None, "cache": None, "hba": None, "asked": None}
    for p in parts[1:]:
        key, _, val = p.partition("=")
        if key == "rw" and not val:
            disk["mode"] = "rw"
        elif key == "mode" and val in MODES:
            disk["mode"] = val
        elif key in ("if", "format", "blocksize", "serial", "overlay", "blkdebug", "logwrites") and val:
            disk[key] = val
        elif key == "hba" and val in PASS_HBAS:
            disk["hba"] = val
        elif key == "cache" and val in CACHE_MODES:
            disk[key] = val
        else:
            die(f"bad --disk option '{p}' in '{spec}' (use if=,mode=ro|rw|discard,rw,overlay=,hba=,format=,"
                f"blocksize=,serial=,blkdebug=,logwrites=,cache={'|'.join(CACHE_MODES)})")
    if disk["if"] not in CONTROLLERS:
        die(f"unknown controller '{disk['if']}'; choose one of: {', '.join(CONTROLLERS)}")
    if disk["hba"] and disk["if"] not in SCSI_PASS:
        die(f"--disk {spec}: hba= is for if=scsi-block or if=scsi-generic")
    if disk["logwrites"]:
        check_write_log(disk, spec)
    if disk["overlay"]:
        if disk["mode"] == "rw":
            die(f"--disk {spec}: overlay= keeps the writes away from the disk; it cannot go with rw")
        disk["mode"] = "discard"
    for what in ("path", "blkdebug"):
        if disk[what] and not os.path.exists(disk[what]):
            die(f"disk '{disk[what]}' does not exist" if what == "path" else f"blkdebug rules '{disk[what]}' missing")
    disk["asked"] = disk["mode"]
    return disk


def check_write_log(disk, spec):
    """logwrites= records what reaches a raw disk that is written to, with
    the guest's flushes (cache=unsafe drops them); its LOG is made new, so
    an existing one must be a write log or empty: never a disk image, an
    ISO or a device named there by mistake."""
    if disk["mode"] != "rw" or disk["blkdebug"] or disk["format"] != "raw" or disk["if"] in SCSI_PASS \
            or disk["cache"] == "unsafe":
        die(f"--disk {spec}: logwrites= records the writes that reach a raw disk image: it needs rw, "
            "and no blkdebug=, scsi-block, scsi-generic or cache=unsafe")
    if os.path.exists(disk["path"]) and not os.path.isfile(disk["path"]):
        die(f"--disk {spec}: logwrites= is for a disk image file, not a device")
    log = disk["logwrites"]
    if os.path.lexists(log):
        if os.path.islink(log) or not os.path.isfile(log):
            die(f"--disk {spec}: the write log '{log}' exists and is no regular file; name a new file")
        with open(log, "rb") as f:
            head = f.read(8)
        if head and head != LOG_MAGIC:
            die(f"--disk {spec}: '{log}' holds data that is no write log; name a new file for logwrites=")


def new_write_log(path):
    """Creates (or empties) the write log PATH, not through a symlink; QEMU
    opens it, it does not create it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    except OSError as e:
        die(f"cannot create the write log '{path}': {e.strerror}")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            die(f"the write log '{path}' is no regular file; name a new file")
    finally:
        os.close(fd)


def check_host_disk(d, force_in_use, force_rw_scsi):
    """Refuses a host block device (or an image a host loop device is backed
    by, or the disk behind a SCSI generic device) that the host is using,
    and SCSI passthrough, which QEMU cannot keep read-only, unless asked
    for read-write. Sets the mode a controller can honour."""
    path = d["path"]
    if d["if"] == "scsi-generic":
        name = hostdisk.sg_block(path)
        if name is False:
            die(f"if=scsi-generic takes a SCSI generic device (/dev/sgN), not {path}")
    if d["if"] == "scsi-block" and not hostdisk.block_name(path):
        die(f"if=scsi-block takes a host SCSI disk (/dev/sdX), not {path}")
    # By any name: the disk or its partitions, another loop device over the
    # same file, another path to the same LUN (disk-inuse, as write-stick).
    try:
        if d["if"] == "scsi-generic":
            used = hostdisk.users(name) if name else []
        else:
            used = hostdisk.users_of_path(path) if hostdisk.block_name(path) or os.path.isfile(path) else []
    except hostdisk.InUseToolMissing as e:
        die(str(e))
    if d["if"] in SCSI_PASS:
        # scsi-generic passes every command; scsi-block emulates only READ and
        # WRITE and passes UNMAP, WRITE SAME, FORMAT and ATA PASS-THROUGH on.
        if not force_rw_scsi:
            die(f"{path}: {d['if']} passes SCSI commands that write (UNMAP, WRITE SAME, FORMAT) to the device, "
                "so it cannot be read-only; use if=virtio-scsi for a read-only disk, or add --force-rw-scsi "
                "to pass it read-write")
    if used:
        if not force_in_use:
            die(f"{used[0]}: not given to the guest ({path}); stop that use first, or add --force-in-use "
                "to attach it read-only anyway (the guest may then see errors that are not there)")
        if given_mode(d) == "rw":
            die(f"{used[0]}: --force-in-use attaches it read-only or with writes discarded, never read-write")
    d["mode"] = given_mode(d)


def given_mode(d):
    """The mode the disk gets: SCSI passthrough is always read-write, and a
    controller that cannot take a read-only drive discards writes instead."""
    if d["if"] in SCSI_PASS:
        return "rw"
    if d["mode"] == "ro" and d["if"] in NO_READONLY:
        return "discard"
    return d["mode"]


def mode_text(d):
    if d["mode"] == "rw":
        return "read-write"
    if d["mode"] == "ro":
        return "read-only"
    where = f"kept in {d['overlay']}" if d["overlay"] else "thrown away"
    why = f" ({d['if']} cannot take a read-only drive)" if d["asked"] == "ro" else ""
    return f"writes {where}{why}"


def mib(n):
    return f"{n / 2**20:.0f} MiB" if n < 2**30 else f"{n / 2**30:.1f} GiB"
