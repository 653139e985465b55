"""qemu/smoke's guest: the rescue image booted through qemu/run with the
battery on (rescue.smoke=) and powered off after it, waited for, its
answers read from its console; a guest that panics or hangs is told from
the end of its console, with the kernel's oops in one line (oops.py) and
what is known of QEMU's lsi53c895a model. smoke.py calls boot()."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import oops
from .arches import ARCHES
from .diskspec import parse_disk
from .say import SMOKE, die
from .tree import RUN_SCRIPT

# A guest that hangs or panics is read from the end of its console.
TAIL_LINES = 40
# QEMU's model of these chips, on a read error (README, "Failing disks").
LSI_MODELS = ("lsi53c895a", "lsi53c810")
LSI_MODEL_FAULT = ("a known fault of QEMU's lsi53c895a model (and lsi53c810), not of the disk or of sym53c8xx: "
                   "{}; smoke a failing disk on megasas or virtio-scsi instead")
LSI_PANIC = ("it completes a command the chip had disconnected without reselecting it, its SCRIPTS run without "
             "their context and overwrite the driver's memory")
LSI_ASSERT = "QEMU stopped on its own assertion when the driver reset the chip with a command still queued"
# The kernel's last line of a panic, after its trace: QEMU then waits for ever.
PANIC_END = b"end Kernel panic"


def console_tail(log):
    """The last TAIL_LINES lines of the console log LOG, indented."""
    try:
        with open(log, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        return f"  | (unreadable: {e.strerror})"
    return "\n".join("  | " + line for line in lines[-TAIL_LINES:]) or "  | (empty)"


def on_lsi(specs):
    """Whether a disk of SPECS is on QEMU's lsi53c895a or lsi53c810 model."""
    return any(parse_disk(s)["if"] in LSI_MODELS for s in specs)


def wait_for_guest(p, log, timeout):
    """Waits for qemu/run P to end; returns why the guest is given up on (a
    panic on its console LOG: its QEMU would wait for ever; no power-off in
    TIMEOUT seconds), or None once it ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            p.wait(timeout=1)
            return None
        except subprocess.TimeoutExpired:
            pass
        try:
            with open(log, "rb") as f:
                if PANIC_END in f.read():
                    return "the guest's kernel panicked"
        except FileNotFoundError:
            pass
    return f"the guest did not power off within {timeout} s"


def run_command(o, specs, log):
    """qemu/run's command line: a direct boot with the battery on, then power-off."""
    console = ARCHES[o.arch]["console"]
    cmd = [RUN_SCRIPT, "--arch", o.arch, "--direct", "--mem", str(o.mem), "--serial-log", log,
           "--append", f"console={console},115200n8 rescue.smoke={o.seconds} rescue.smoke_timeout={o.disk_timeout} "
           "rescue.after=poweroff"]
    if o.firmware == "uefi":
        cmd += ["--firmware", "uefi"]
    for s in specs:
        cmd += ["--disk", s]
    for b in o.pci:
        cmd += ["--pci", b]
    return cmd + ["--smp", str(o.smp)] + o.extra


def boot(o, specs):
    """Boots the image with the battery on; returns (its answers, seconds,
    seconds from its kernel's start to its disks scanned, its kernel's
    warnings and oopses, qemu/run's and QEMU's messages)."""
    tmp = tempfile.mkdtemp(prefix="extrescue-smoke.")
    log = os.path.join(tmp, "serial.log")
    start = time.monotonic()
    with open(os.path.join(tmp, "run.err"), "w+") as errf:
        p = subprocess.Popen(run_command(o, specs, log), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=errf)
        why = wait_for_guest(p, log, o.timeout)
        if why:
            p.terminate()
            p.wait()
        errf.seek(0)
        err = errf.read()
    if why:
        given_up(why, err, log, specs)
    took = time.monotonic() - start
    if p.returncode != 0:
        if "lsi53c895a.c:" in err and "Assertion" in err and on_lsi(specs):
            print(f"qemu/smoke: {LSI_MODEL_FAULT.format(LSI_ASSERT)}", file=sys.stderr)
        die(f"qemu/run failed ({p.returncode}): {err.strip().splitlines()[-1:] if err.strip() else ''}", SMOKE)
    for line in err.splitlines():
        if ": disk " in line:
            print(line, file=sys.stderr)
    with open(log, errors="replace") as f:
        text = f.read()
    shutil.rmtree(tmp)
    answers, guest_boot = answers_of(text)
    said = oops.summary(text)
    trouble = [said] if said else []
    return answers, took, guest_boot, trouble, err


def given_up(why, err, log, specs):
    """Tells why a guest was given up on (WHY), with qemu/run's messages
    (ERR), the end of its console LOG and its kernel's oops; exits 2."""
    # qemu/run's own words first: after --pci, whether the devices went back to their drivers.
    for line in err.splitlines():
        if line.startswith("qemu/run: "):
            print(line, file=sys.stderr)
    print(f"qemu/smoke: the last {TAIL_LINES} lines of the console ({log}):\n{console_tail(log)}",
          file=sys.stderr)
    try:
        with open(log, errors="replace") as f:
            said = oops.summary(f.read())
    except OSError:
        said = None
    if said:
        print(f"qemu/smoke: the guest's kernel: {said}", file=sys.stderr)
        if "sym_" in said and on_lsi(specs):
            print(f"qemu/smoke: {LSI_MODEL_FAULT.format(LSI_PANIC)}", file=sys.stderr)
    die(f"{why}; its console log is {log}", SMOKE)


def answers_of(text):
    """(rescue-smoke's answers, one per disk, and the seconds from the
    kernel's start to its disks scanned, or None) from console TEXT."""
    answers, guest_boot = [], None
    for line in text.splitlines():
        if line.startswith("smoke-boot: "):
            try:
                guest_boot = float(json.loads(line[len("smoke-boot: "):])["scanned"])
            except (ValueError, KeyError, TypeError):
                pass
        if line.startswith("smoke-json: "):
            try:
                answers.append(json.loads(line[len("smoke-json: "):]))
            except ValueError as e:
                die(f"the guest's answer is not JSON ({e}): {line[:200]}", SMOKE)
    if "reboot: Power down" not in text and not answers:
        die("the guest gave no answers (does the image have rescue-smoke? run make)", SMOKE)
    return answers, guest_boot
