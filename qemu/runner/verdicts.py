"""qemu/smoke's checks: the guest's answer about a disk (rescue-smoke
--json, one per disk) matched to the host's view of it (views.py) and
judged check by check, CHECKS in the report's order. smoke.py prints them;
tests/test_smoke_verdicts.py and tests/test_controllers.py judge with them."""
from .controllers import NO_READONLY
from .views import ends

CHECKS = ("found", "driver", "size", "blocks", "first MiB", "last MiB", "read", "ext", "health", "kernel log",
          "mode", "unchanged")
# rescue-smoke's steps on a disk in its order (the "step" of a stalled
# battery), and the check each answers.
STEPS = (("write probe", "mode"), ("first MiB", "first MiB"), ("last MiB", "last MiB"), ("read", "read"),
         ("ext", "ext"), ("health", "health"))


def match(view, answers):
    """The guest's answer about the host disk VIEW: by serial, else by a size no other disk has."""
    for a in answers:
        if a.get("serial") == view["serial"]:
            return a
    same = [a for a in answers if a.get("size") == view["size"]]
    return same[0] if len(same) == 1 else None


def verdicts(view, a):
    """{check: (ok, detail)} for one disk."""
    v = {}
    if a is None:
        v["found"] = (False, f"no disk of serial {view['serial']} or {view['size']} bytes in the guest")
        return v
    v["found"] = (True, f"/dev/{a['disk']}")
    irq = f", {a['irq']}" if a.get("irq", "-") != "-" else ""
    v["driver"] = (a["controller"] != "-", f"{a['controller']} {a['driver']} ({a['via'] or '?'}){irq}")
    v["size"] = (a["size"] == view["size"], f"{a['size']} bytes (host {view['size']})")
    v["blocks"] = ((a["logical"], a["physical"]) == (view["logical"], view["physical"]),
                   f"{a['logical']}/{a['physical']} (host {view['logical']}/{view['physical']})")
    for key, name in (("first_mib", "first MiB"), ("last_mib", "last MiB")):
        v[name] = ends_verdict(view[key], a[key])
    v["read"] = read_verdict(a.get("read") or {})
    bad = [e for e in a["ext"] if e["e2fsck"] != 0]
    v["ext"] = (not bad, "no ext volume" if not a["ext"] else
                ", ".join(f"{e['device']} {e['kind']} e2fsck -fn {e['e2fsck']}" for e in a["ext"]))
    health = a.get("health") or "n/a: not asked"
    v["health"] = (not health.startswith("FAILED"), health)
    v["kernel log"] = (not a["kernel_log"], f"{len(a['kernel_log'])} error lines: {a['kernel_log'][0]}"
                       if a["kernel_log"] else "no errors, resets or timeouts")
    if view.get("mode"):
        v["mode"] = mode_verdict(view, a)
    stall = a.get("stalled")
    if stall:
        # The check of the step the guest stopped it at fails; the later ones were never asked.
        order = [c for _, c in STEPS]
        at = dict(STEPS).get(stall.get("step"), "first MiB")
        for c in order[order.index(at) + 1:]:
            v.pop(c, None)
        v[at] = (False, f"no answer within {stall.get('seconds')} s: the disk's battery stalled here and was stopped")
    return v


def ends_verdict(host, guest):
    """(ok, detail): the guest's sha256 of a MiB against the host's. None is
    looked at first: behind a passed controller the "host's" view is the
    guest's own answer, and None there too."""
    if guest is None:
        return False, "not read"
    if guest == "unreadable":
        return False, "unreadable: a read error in it"
    return (guest == host, "same sha256 as the host" if guest == host
            else f"sha256 {guest[:12]}... differs from the host's {host[:12]}...")


def read_verdict(r):
    """(ok, detail) of the guest's read passes R: the first error and where, or the speeds."""
    errors = [(k, p["error"]) for k, p in r.items() if isinstance(p, dict) and p.get("error")]
    if not r:
        return False, "not read"
    if errors or "error" in r:
        k, e = errors[0] if errors else ("read", r.get("error"))
        where = f" at sector {e['sector']}" if isinstance(e, dict) and "sector" in e else ""
        return False, f"{k} read error{where}: {e.get('message') if isinstance(e, dict) else e}"
    s, q = r.get("sequential", {}), r.get("random-4k", {})
    return True, f"{s.get('mb_per_s', 0):.1f} MB/s, {q.get('iops', 0):.0f} IOPS, p99 {q.get('lat_us_p99', 0):.0f} us"


def mode_verdict(view, a):
    """(ok, detail): the guest's kernel holds the disk as its mode says."""
    ro, write = a.get("ro"), a.get("write")
    if view["mode"] == "ro":
        if ro == 1 and write == "refused":
            return True, "read-only in the guest's kernel, a write refused"
        if ro == 0 and view["if"] == "nvme":
            # QEMU's NVMe model (7.2) sets no write-protect bit in the namespace.
            return True, "read-only in QEMU (readonly=on), which fails its writes; the guest's kernel shows it writable"
        return False, f"asked read-only, but the guest's kernel has ro={ro} and its write probe says {write}"
    if view["mode"] == "discard":
        why = f" ({view['if']} cannot take a read-only drive)" if view["if"] in NO_READONLY else ""
        return True, "writes go to a throw-away overlay" + why
    return ro == 0, "read-write, as asked" if ro == 0 else "asked read-write, but the guest's kernel has it read-only"


def unchanged(view):
    """(ok, detail), or None for a read-write disk: a disk given read-only or
    with writes discarded has the same first and last MiB on the host after
    the run as before it."""
    if view.get("mode") not in ("ro", "discard"):
        return None
    same = ends(view["path"], view["size"]) == (view["first_mib"], view["last_mib"])
    return same, "first and last MiB as before the run" if same else "CHANGED on the host during the run"
