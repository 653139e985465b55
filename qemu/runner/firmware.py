"""UEFI for the machine: the firmware's code and its variable store (a
throw-away overlay, or a file of the user's), Secure Boot, and a Machine
Owner Key enrolled with --mok. build.py calls firmware_args() when the
machine boots through UEFI."""
import os
import shutil
import subprocess
import sys

from .arches import ARCHES
from .machine import qv
from .say import die
from .tree import OUT

# shim's vendor GUID for the Machine Owner Key list.
SHIM_GUID = "605dab50-e046-4300-abb6-3dd810dd8b23"


def firmware_args(o, m):
    """UEFI's code and variable store. The store is a throw-away overlay (the
    host copy stays pristine) unless --efivars names a file of its own; with
    --mok the certificate is enrolled into a fresh copy, as mokutil would."""
    arch = ARCHES[o.arch]
    code, vars_ = arch["firmware"][1 if o.secureboot else 0]
    for f in (code, vars_):
        if not os.path.exists(f):
            die(f"{f} missing; install the {arch['package']} package (make does)")
    if o.secureboot and o.arch == "x86_64":
        m.add("-global", "driver=cfi.pflash01,property=secure,value=on")
    m.add("-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={qv(code)}")
    store = enrolled(o, vars_) if o.mok else o.efivars
    if store:
        if not os.path.exists(store):
            shutil.copyfile(vars_, store)
        m.add("-drive", f"if=pflash,format=raw,unit=1,file={qv(store)}")
    else:
        m.add("-drive", f"if=pflash,format=raw,unit=1,snapshot=on,file={qv(vars_)}")


def enrolled(o, vars_):
    """A variable store made from VARS_ with --mok's certificate enrolled:
    --efivars's file, or an unlinked one QEMU gets open (/dev/fd/N)."""
    if not os.path.exists(o.mok):
        die(f"--mok {o.mok}: no such certificate (make builds out/{o.arch}/extrescue-mok.cer)")
    # virt-fw-vars is the build machine's tool: the one unpacked for the tests.
    virt_firmware = os.path.join(OUT, "build/virt-firmware/usr/lib/python3/dist-packages")
    if not os.path.isdir(virt_firmware):
        die(f"{virt_firmware} missing; run 'make virt-firmware'")
    out = o.efivars or os.path.join(os.environ.get("TMPDIR", "/tmp"), f"extrescue-efivars-{os.getpid()}.fd")
    r = subprocess.run([sys.executable, "-m", "virt.firmware.vars", "-i", vars_, "-o", out,
                        "--add-mok", SHIM_GUID, o.mok], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=virt_firmware))
    if r.returncode != 0:
        die(f"--mok: virt-fw-vars could not enroll {o.mok}: {r.stderr.strip().splitlines()[-1:]}")
    if o.efivars:
        return o.efivars
    # Unlinked at once and handed to QEMU open: nothing is left behind.
    fd = os.open(out, os.O_RDWR)
    os.unlink(out)
    os.set_inheritable(fd, True)
    return f"/dev/fd/{fd}"
