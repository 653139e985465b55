"""Where things are: this checkout (TOP), the build folder of each
architecture (make's $OUT for the one it built, the others beside it) and
the newest ISO there. cli.py, firmware.py and hostdisk.py (for disk-inuse)
look here; qemu/smoke runs qemu/run as RUN_SCRIPT."""
import glob
import os

from .say import die

QEMU_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = os.path.dirname(QEMU_DIR)
RUN_SCRIPT = os.path.join(QEMU_DIR, "run")
ARCH = os.environ.get("EXTRESCUE_ARCH", "x86_64")
OUT = os.environ.get("OUT", os.path.join(TOP, "out", ARCH))


def out_dir(arch):
    """The build folder of ARCH: $OUT for the one make exported it for;
    another's beside it, as make puts it (out/ARCH, or OUT-ARCH beside a
    folder of another name)."""
    if arch == ARCH:
        return OUT
    if OUT == os.path.join(TOP, "out", ARCH):
        return os.path.join(TOP, "out", arch)
    return f"{OUT}-{arch}"


def default_iso(arch):
    out = out_dir(arch)
    isos = sorted(glob.glob(os.path.join(out, f"extrescue-*-{arch}.iso")), key=os.path.getmtime)
    if not isos:
        die(f"no ISO in {out}; run 'make' first or pass --iso")
    return isos[-1]
