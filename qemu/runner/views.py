"""qemu/smoke's host side: what this host sees of each disk before the
guest reads it (size, sector sizes, serial, sha256 of the first and last
MiB), also of the disks behind a PCI device about to be passed, and how
that device is reset. smoke.py reads these; verdicts.py compares the
guest's answers with them; tests/test_controllers.py uses host_view."""
import hashlib
import os

from . import hostdisk
from .diskspec import given_mode
from .say import SMOKE, die

# Block devices rescue-smoke in the guest does not read (its disks()).
GUEST_SKIPS = ("loop", "ram", "zram", "sr", "md", "dm-", "nbd", "fd")


def host_view(n, d):
    """What the host sees of disk N (SPEC parsed as qemu/run does)."""
    size = hostdisk.size_of(d["path"])
    name = hostdisk.block_name(d["path"])
    # qemu/run passes a host disk's sector sizes on; QEMU's default is 512.
    lbs, pbs = (int(d["blocksize"]),) * 2 if d["blocksize"] else hostdisk.block_sizes(d["path"]) or (512, 512)
    mode = given_mode(d)
    view = {"path": d["path"], "if": d["if"], "size": size, "logical": lbs, "physical": pbs, "mode": mode,
            "serial": d["serial"] or hostdisk.default_serial(n, d["path"]), "host_device": name}
    view["first_mib"], view["last_mib"] = ends(d["path"], size)
    return view


def serial_of(name):
    """What host disk NAME says its serial is, read as the image's
    rescue-smoke reads it in the guest (so a disk behind a passed controller
    is found again by it): the plain characters, at most 80."""
    block = os.path.join(hostdisk.sysfs(), "block", name)
    raw = b""
    for f in ("serial", "device/serial"):
        try:
            with open(os.path.join(block, f), "rb") as fh:
                raw = fh.read(4096)
            break
        except OSError:
            pass
    else:
        try:
            with open(os.path.join(block, "device", "vpd_pg80"), "rb") as fh:
                raw = fh.read(4096)[4:]      # the unit serial number page, after its header
        except OSError:
            pass
    text = "".join(c for c in raw.decode("latin-1") if c.isascii() and (c.isalnum() or c in "._:+/ -"))
    return text[:80].strip()


def pci_views(bdf):
    """What the host sees of each disk behind PCI device BDF, read before it
    is passed: the guest's answers about them are checked against it."""
    views = []
    for name in hostdisk.behind_pci(bdf):
        if not os.path.isdir(os.path.join(hostdisk.sysfs(), "block", name)):
            continue                             # a partition: its disk is checked
        # What the guest's battery leaves out (an optical drive among them).
        if name.startswith(GUEST_SKIPS):
            continue
        path = f"/dev/{name}"
        try:
            size = hostdisk.size_of(path)
            if not size:
                continue                         # no medium: the battery skips it too
            sizes = hostdisk.block_sizes(path)
            if not sizes:
                die(f"{path} behind {bdf}: its sector sizes are not in sysfs; is it a disk?", SMOKE)
            view = {"path": path, "if": f"pci {bdf[-7:]}", "size": size, "logical": sizes[0], "physical": sizes[1],
                    "mode": None, "serial": serial_of(name) or None, "host_device": name, "pci": bdf}
            view["first_mib"], view["last_mib"] = ends(path, size)
        except OSError as e:
            die(f"{path} behind {bdf} cannot be read on this host ({e.strerror}); run as root, or leave "
                "out a failing disk's controller", SMOKE)
        views.append(view)
    return views


def reset_methods(bdf):
    """The ways the host's kernel can reset PCI device BDF (sysfs
    reset_method: flr, pm, bus, ...); [] when it has none, as the kernel
    then shows neither reset_method nor reset."""
    dev = os.path.join(hostdisk.sysfs(), "bus", "pci", "devices", bdf)
    try:
        with open(os.path.join(dev, "reset_method")) as f:
            return f.read().split()
    except OSError:
        return ["a kernel older than 5.15 does not say which"] if os.path.exists(os.path.join(dev, "reset")) else []


def reset_line(bdf, methods, warnings):
    """One line of the report on how BDF is reset around the guest's use."""
    said = f"; QEMU warned {warnings} times that it cannot reset it" if warnings else ""
    if not methods:
        return (f"{bdf}: no reset mechanism (no FLR, power-management, bus or device-specific reset): "
                f"the guest gets the controller as its last user left it, and so does the next{said}")
    return f"{bdf}: reset by {', '.join(methods)} when the guest takes it and gives it back{said}"


def ends(path, size):
    """sha256 of the first and the last MiB of PATH (SIZE bytes)."""
    with open(path, "rb") as f:
        first = hashlib.sha256(f.read(1 << 20)).hexdigest()
        f.seek(max(0, size - (1 << 20)))
        return first, hashlib.sha256(f.read(1 << 20)).hexdigest()
