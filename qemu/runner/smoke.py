"""qemu/smoke's command line: the options, the host's view of each disk
read before the boot (views.py), the boot (guest.py), each disk's checks
(verdicts.py), and the report: a table, the details, the passed devices'
resets, and JSON with --json. qemu/smoke calls main()."""
import argparse
import json
import os
import sys

from . import vfio
from .arches import ARCHES
from .diskspec import parse_disk
from .guest import boot
from .say import SMOKE, die
from .verdicts import CHECKS, match, unchanged, verdicts
from .views import host_view, pci_views, reset_line, reset_methods

DESCRIPTION = """Does this controller, with this kernel, read my disks and give sane answers?

Boots the rescue image (direct kernel boot; --firmware uefi for OVMF) with
the named disks or PCI device through qemu/run, read-only unless a disk says
otherwise, lets the image's rescue-smoke run its battery on every disk and
power off, and compares each answer with the host's own view of the same
disk: size and block sizes, sha256 of the first and last MiB. Prints one
table, a row per disk and a verdict per check, and the same as JSON with
--json FILE. Exit status 0 only when every check passed.

usage: qemu/smoke [--arch x86_64|arm64] [--seconds N] [--json FILE] [--firmware uefi] [--mem MiB] [--smp N]
                  [--disk SPEC]... [--pci BDF]... [-- qemu/run options]
  SPEC is qemu/run's: PATH[,if=CTRL][,mode=ro|rw|discard][,blkdebug=RULES]...
"""


def main():
    o = parser().parse_args()
    settle(o)
    views = [host_view(n, parse_disk(s)) for n, s in enumerate(o.disk)]
    bdfs = [vfio.full_bdf(b) for b in o.pci]
    # Read before the boot: a passed device's disks leave the host with it.
    views += [v for b in bdfs for v in pci_views(b)]
    resets = {b: reset_methods(b) for b in bdfs}
    # Every disk may use its whole bound and the guest still be waited for.
    if o.timeout is None:
        o.timeout = max(600, 180 + len(views) * o.disk_timeout)
    answers, took, guest_boot, trouble, err = boot(o, o.disk)
    rows, results = judge(views, answers, o.pci)
    ok = all(good for _, v in rows for good, _ in v.values()) and not trouble
    report(rows, took, guest_boot, trouble)
    pci = pci_report(bdfs, resets, err)
    if o.json:
        with open(o.json, "w") as f:
            json.dump({"seconds": round(took, 1), "guest_boot_seconds": guest_boot, "passed": ok,
                       "guest_kernel_trouble": trouble, "pci": pci, "disks": results}, f, indent=1)
    sys.exit(0 if ok else 1)


def parser():
    ap = argparse.ArgumentParser(prog="qemu/smoke", description=DESCRIPTION,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--disk", action="append", default=[], metavar="SPEC")
    ap.add_argument("--pci", action="append", default=[], metavar="BDF")
    ap.add_argument("--seconds", type=int, default=3, help="seconds of reading per disk and pass (default 3)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    ap.add_argument("--arch", choices=sorted(ARCHES), default=os.environ.get("EXTRESCUE_ARCH", "x86_64"),
                    help="the guest's machine: x86_64 or arm64 (default $EXTRESCUE_ARCH or x86_64)")
    ap.add_argument("--firmware", choices=["bios", "uefi"], default="bios",
                    help="x86_64: bios (default) or uefi; arm64 boots its kernel directly, or with uefi")
    ap.add_argument("--mem", type=int, default=1024)
    ap.add_argument("--smp", type=int, default=2, help="virtual CPUs (default 2)")
    ap.add_argument("--disk-timeout", type=int, metavar="N",
                    help="seconds one disk's battery may take in the guest before it is reported as stalled "
                         "and the next disk is read (default 20 * SECONDS + 90)")
    ap.add_argument("--timeout", type=int, help="seconds before the guest is given up on "
                                                "(default 180 + DISK_TIMEOUT for each disk, at least 600)")
    ap.add_argument("extra", nargs="*", help="further qemu/run options after --")
    return ap


def settle(o):
    """The refusals of the options, and --disk-timeout's default."""
    if not o.disk and not o.pci:
        die("name a disk (--disk PATH[,if=CTRL]) or a PCI device (--pci BDF)", SMOKE)
    if not 1 <= o.seconds <= 600:
        die("--seconds is 1 to 600", SMOKE)
    if o.disk_timeout is None:
        o.disk_timeout = 20 * o.seconds + 90
    if not 1 <= o.disk_timeout <= 86400:
        die("--disk-timeout is 1 to 86400 seconds", SMOKE)
    if o.timeout is not None and o.timeout < 1:
        die("--timeout is 1 second or more", SMOKE)


def judge(views, answers, pci):
    """([(row's view, {check: (ok, detail)})], the same for JSON): each host
    disk of VIEWS with the guest's answer about it; with PCI devices passed,
    also each answer no host disk claimed."""
    rows, results = [], []

    def record(view, a, row_view):
        v = verdicts(view, a)
        same = unchanged(view) if row_view is view else None
        if same:
            v["unchanged"] = same
        results.append({"host": view if row_view is view else None, "guest": a,
                        "checks": {k: {"ok": good, "detail": d} for k, (good, d) in v.items()}})
        rows.append((row_view, v))

    claimed = set()
    for view in views:
        a = match(view, [x for x in answers if x["disk"] not in claimed])
        if a:
            claimed.add(a["disk"])
        record(view, a, view)
    # Disks behind a passed PCI device have no host view: the guest's answers
    # are checked against themselves (found, driver, read, ext, health, log).
    for a in answers:
        if a["disk"] not in claimed and pci:
            record({k: a[k] for k in ("size", "logical", "physical", "first_mib", "last_mib")} | {"serial": None},
                   a, {"path": f"(guest) /dev/{a['disk']}", "if": "pci"})
    return rows, results


def report(rows, took, guest_boot, trouble):
    """The table, a row per disk and a column per check, then the details
    of what failed and of every driver and read, then the guest kernel's trouble."""
    booted = f" (its kernel to its disks scanned: {guest_boot:.1f} s)" if guest_boot is not None else ""
    print(f"qemu/smoke: {len(rows)} disks, guest booted, checked and powered off in {took:.0f} s{booted}")
    print(f"{'disk':28} {'controller':14}" + "".join(f" {c:10}" for c in CHECKS))
    for view, v in rows:
        print(f"{view['path'][-28:]:28} {view['if']:14}"
              + "".join(f" {('ok' if v[c][0] else 'FAIL') if c in v else '-':10}" for c in CHECKS))
    for view, v in rows:
        for c in CHECKS:
            if c in v and (not v[c][0] or c in ("driver", "read")):
                print(f"  {view['path']}: {c}: {v[c][1]}")
    # A guest kernel that warned or oopsed did not pass, whatever it read.
    for line in trouble:
        print(f"  the guest's kernel: {line}")


def pci_report(bdfs, resets, err):
    """A line on each passed device's reset, QEMU's warnings about it
    counted in ERR; returns the same for JSON."""
    pci = []
    for b in bdfs:
        warned = sum(1 for line in err.splitlines() if "Cannot reset device" in line and b in line)
        print(f"  {reset_line(b, resets[b], warned)}")
        pci.append({"bdf": b, "reset": resets[b], "qemu_reset_warnings": warned})
    return pci
