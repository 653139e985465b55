"""Boots extrescue through qemu/run and drives its shell on the serial console.

Every guest writes its whole serial log under out/<arch>/test-logs/; the log of a
passing test is removed, the log of a failing one stays. Timeouts are scaled
by EXTRESCUE_TIMEOUT_SCALE, the one knob for slow machines.
"""
import fcntl
import glob
import os
import re
import socket
import struct
import subprocess
import time

import pexpect
from pexpect import fdpexpect

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.environ.get("OUT", os.path.join(TOP, "out", os.environ.get("EXTRESCUE_ARCH", "x86_64")))


# The pins as one list, as make writes it from the lock files and gives it
# (LOCK) to the scripts it runs; a test that runs one itself passes it.
PIN_LIST = os.path.join(OUT, "stamps", "sources.lock")


def lock_lines():
    """The fields of every pin x86_64 builds with: package/*/NAME.lock and NAME.lock.amd64."""
    paths = glob.glob(os.path.join(TOP, "package/*/*.lock")) + glob.glob(os.path.join(TOP, "package/*/*.lock.amd64"))
    lines = []
    for path in sorted(paths):
        with open(path) as f:
            lines += [line.split() for line in f if line.strip() and not line.startswith("#")]
    return lines


def upstream_version(name):
    """The upstream version of pin NAME: its Debian version without epoch, +ds/+dfsg or revision."""
    version = next(fields[4] for fields in lock_lines() if fields[0] == name)
    return re.sub(r"[+~-].*$", "", version.split(":")[-1])


LOGS = os.path.join(OUT, "test-logs")
# The download cache and the compiler cache the build uses: a test that
# builds in a tree of its own (another EXTRESCUE_CACHE) still reads them.
HOST_CACHE = os.environ.get("EXTRESCUE_CACHE") or os.path.expanduser("~/.cache/extrescue")
CCACHE_DIR = os.environ.get("CCACHE_DIR") or os.path.join(HOST_CACHE, "ccache")
RUN = os.path.join(TOP, "qemu", "run")
SCALE = float(os.environ.get("EXTRESCUE_TIMEOUT_SCALE", "1"))
# Virtual CPUs per test guest: one (bench/bench-test-smp, two guests on two
# cores: 8% faster than two vCPUs; a second vCPU only competes for the
# cores the other guests use). A test's own
# --smp comes later and wins.
SMP = os.environ.get("EXTRESCUE_TEST_SMP", "1")
PROMPT = r"extrescue:[^\r\n]*# "
# Patterns that fail a test wherever they appear in the serial log.
FATAL = [r"Kernel panic", r"Call Trace:", r"BUG:", r"Oops"]
# The kernel's last words: every wait ends there rather than at its timeout
# (an unattended run waits up to 15 minutes for a power-off that cannot come).
PANIC = r"end Kernel panic - not syncing[^\r\n]*"
# A failure shows this much of the console, enough to read under parallel runs.
TAIL_LINES = 40
# A direct kernel boot takes the initramfs before compression (make writes it
# beside the compressed one, from which it differs in nothing else): under TCG
# the kernel spent 0.6 s of each boot unpacking zstd, more than any driver.
# The CD, USB, netboot and Secure Boot tests boot the compressed one the image
# carries, and so do the benchmarks (conftest.py sets this for the tests).
RAW_INITRD = os.path.join(OUT, "build", "initramfs.cpio")
IMAGE_INITRD = os.path.join(OUT, "initramfs.cpio.zst")
DIRECT_INITRD = None


def _made_before_image(raw):
    """RAW is there and no newer than the image's initramfs compressed from it
    (a build stopped between the two leaves a cpio the image does not carry)."""
    return os.path.exists(raw) and os.path.exists(IMAGE_INITRD) and os.path.getmtime(raw) <= os.path.getmtime(IMAGE_INITRD)


def scaled(seconds):
    return seconds * SCALE


class GuestError(AssertionError):
    pass


class Shell:
    """A root shell on one console of a guest: `run()` returns (exit status,
    output) of a command. Subclasses give it self.child, self.name, self.log_path."""

    def wait_shell(self):
        """Waits for the root shell; returns seconds since QEMU started."""
        self.expect([PROMPT], scaled(self.boot_timeout), "the shell prompt")
        took = time.monotonic() - self.started
        # A quiet prompt and no line editing keep command output clean.
        self.run("stty -echo cols 500; PS1='extrescue:# '")
        return took

    def expect(self, patterns, timeout, what):
        try:
            i = self.child.expect(list(patterns) + [PANIC], timeout=timeout)
        except pexpect.TIMEOUT:
            raise GuestError(f"{self.name}: timed out after {timeout:.0f}s waiting for {what}; "
                             f"log {self.log_path}; its last {TAIL_LINES} lines:\n{self.tail()}")
        except pexpect.EOF:
            raise GuestError(f"{self.name}: QEMU exited while waiting for {what}; "
                             f"log {self.log_path}; its last {TAIL_LINES} lines:\n{self.tail()}")
        if i == len(patterns):
            raise GuestError(f"{self.name}: the kernel panicked while waiting for {what}; "
                             f"log {self.log_path}; its last {TAIL_LINES} lines:\n{self.tail()}")
        return i

    def tail(self):
        """The console's last TAIL_LINES lines, from its log (what pexpect
        has not consumed yet when there is no log)."""
        try:
            with open(self.log_path, errors="replace") as f:
                text = f.read()
        except OSError:
            text = self.child.before if isinstance(self.child.before, str) else ""
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        return "\n".join("  | " + line for line in lines[-TAIL_LINES:])

    def run(self, command, timeout=60):
        """Runs COMMAND in the guest shell; returns (status, output)."""
        self.seq += 1
        begin, end = f"__XRB{self.seq}__", f"__XRE{self.seq}_"
        # The markers are split with quotes so the echoed command never matches.
        b1, b2 = begin[:4], begin[4:]
        e1, e2 = end[:4], end[4:]
        self.send_command(f"echo {b1}''{b2}; {command}; echo {e1}''{e2}$?__")
        self.expect([re.escape(begin) + r"\r*\n"], scaled(timeout), f"start of '{command}'")
        self.expect([re.escape(end) + r"(\d+)__"], scaled(timeout), f"end of '{command}'")
        output = self.child.before.replace("\r\n", "\n").replace("\r", "")
        status = int(self.child.match.group(1))
        return status, output

    def send_command(self, line):
        """Sends LINE to the shell without pexpect's pause before a send (50 ms,
        for programs that flush their input as they turn echo off, such as a
        password prompt; kept for the raw sendline()s that answer one): a shell
        at its prompt loses nothing, and every command of the suite is one."""
        pause, self.child.delaybeforesend = self.child.delaybeforesend, None
        try:
            self.child.sendline(line)
        finally:
            self.child.delaybeforesend = pause

    def check(self, command, timeout=60):
        """Runs COMMAND and fails unless it exits 0; returns its output."""
        status, output = self.run(command, timeout)
        if status != 0:
            raise GuestError(f"{self.name}: '{command}' exited {status}: {output[-800:]}")
        return output


class Guest(Shell):
    """One QEMU boot, driven over its first serial port (stdio: ttyS0, on
    arm64's virt ttyAMA0)."""

    def __init__(self, name, args, boot_timeout=120):
        os.makedirs(LOGS, exist_ok=True)
        self.name = name
        self.log_path = os.path.join(LOGS, f"{name}.log")
        # (x86_64's: another architecture's guest boots its own initramfs.)
        other_arch = "--arch" in args and list(args)[list(args).index("--arch") + 1] != "x86_64"
        if "--direct" in args and "--initrd" not in args and DIRECT_INITRD and _made_before_image(DIRECT_INITRD) \
                and not other_arch:
            args = ["--initrd", DIRECT_INITRD] + list(args)
        self.cmd = [RUN, "--serial-log", self.log_path, "--smp", SMP] + list(args)
        self.boot_timeout = boot_timeout
        self.started = None
        self.child = None
        self.seq = 0
        self.consoles = []

    def start(self):
        if os.path.exists(self.log_path):
            os.unlink(self.log_path)
        self.started = time.monotonic()
        self.child = pexpect.spawn(self.cmd[0], self.cmd[1:], encoding="utf-8",
                                   codec_errors="replace", timeout=scaled(60))
        return self

    def poweroff(self, command="poweroff -f"):
        """Powers off with COMMAND (plain `poweroff` runs extrescue's way out)."""
        self.send_command(command)
        self.expect([pexpect.EOF], scaled(60), "QEMU to exit after poweroff")
        self.child.close()
        return self.child.exitstatus

    def drain(self):
        """Reads what the console has printed so far, without waiting: a test
        that watches the serial log instead of expecting on the console must
        keep the pty from filling, or the guest stalls on its next write."""
        try:
            while True:
                self.child.read_nonblocking(65536, timeout=0)
        except (pexpect.TIMEOUT, pexpect.EOF):
            pass

    def serial_log_grown(self, seen):
        """SEEN (bytes of the serial log read before) plus what was added since."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(len(seen))
                return seen + f.read()
        except FileNotFoundError:
            return seen

    def kill(self):
        for c in self.consoles:
            c.close()
        if self.child and self.child.isalive():
            self.child.terminate(force=True)

    def serial_log(self):
        """The serial log so far: empty until qemu/run has opened it, which
        on a loaded machine can take more than a second (Secure Boot first
        prepares the firmware's variable store)."""
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def assert_no_fatal(self):
        log = self.serial_log()
        for pat in FATAL:
            m = re.search(pat, log)
            if m:
                raise GuestError(f"{self.name}: serial log has '{m.group(0)}'; see {self.log_path}")


class SocketConsole(Shell):
    """Another console of a running guest (a second serial port, a virtio
    console) that QEMU offers on a unix socket; logged beside the guest's."""

    def __init__(self, guest, path, name):
        self.name = f"{guest.name}-{name}"
        self.log_path = os.path.join(LOGS, f"{self.name}.log")
        self.boot_timeout = guest.boot_timeout
        self.started = guest.started
        self.seq = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + scaled(30)
        while True:
            try:
                self.sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    raise GuestError(f"{self.name}: QEMU never offered {path}")
                time.sleep(0.05)
        self.log = open(self.log_path, "w")
        self.child = fdpexpect.fdspawn(self.sock.fileno(), encoding="utf-8", codec_errors="replace",
                                       timeout=scaled(60), logfile=self.log)
        guest.consoles.append(self)

    def close(self):
        self.sock.close()
        self.log.close()


def boot_with_disks(guest, name, disks, mem=512):
    """Boots the kernel directly with DISKS (virtio, writable); waits for the shell."""
    args = ["--direct", "--mem", str(mem)]
    for d in disks:
        args += ["--disk", f"{d},if=virtio-blk,rw"]
    g = guest(name, args)
    g.wait_shell()
    return g


# The serial console of each architecture's virtual machine (qemu/run --arch).
SERIAL_CONSOLE = {"x86_64": "ttyS0", "arm64": "ttyAMA0"}


def run_to_poweroff(guest, name, disks, params, mem=1024, timeout=180, initrd=None, arch="x86_64"):
    """Boots ARCH's kernel with DISKS (virtio, writable) and the kernel
    parameters PARAMS plus rescue.after=poweroff (and INITRD if given); waits
    for the power-off; returns the serial log."""
    args = ["--arch", arch, "--direct", "--mem", str(mem), "--append",
            f"console={SERIAL_CONSOLE[arch]},115200n8 {params} rescue.after=poweroff"] + (["--initrd", initrd] if initrd else [])
    for d in disks:
        args += ["--disk", f"{d},if=virtio-blk,rw"]
    g = guest(name, args, boot_timeout=timeout)
    g.expect([pexpect.EOF], scaled(timeout), "the unattended run to power off")
    g.assert_no_fatal()
    return g.serial_log()


def power_cut(guest, name, img, command, disks=None):
    """Boots with IMG (or DISKS, IMG among them; virtio, writable), runs
    COMMAND (it mounts and writes), then cuts the power with the filesystem
    mounted; fails unless IMG's journal is left needing recovery."""
    args = ["--direct"]
    for d in disks or [img]:
        args += ["--disk", f"{d},if=virtio-blk,rw"]
    g = guest(name, args)
    g.wait_shell()
    g.check(command)
    cut_power(g, img)


def cut_power(g, img):
    """Resets guest G at once (no sync, no unmount; -no-reboot ends QEMU);
    fails unless IMG's journal is left needing recovery."""
    g.send_command("echo b > /proc/sysrq-trigger")
    g.expect([pexpect.EOF], scaled(60), "QEMU to stop after the power cut")
    assert "needs_recovery" in host(["dumpe2fs", "-h", img]).stdout, f"{img}: no journal left to recover"


class Guests:
    """Starts guests (guests(name, args)) and, at finish(), kills them all and
    removes their logs unless KEEP_LOGS (a failure keeps them for a look)."""

    def __init__(self):
        self.made = []

    def __call__(self, name, args, boot_timeout=120):
        g = Guest(name, args, boot_timeout).start()
        self.made.append(g)
        return g

    def finish(self, keep_logs):
        for g in self.made:
            g.kill()
            for path in [] if keep_logs else [g.log_path] + [c.log_path for c in g.consoles]:
                if os.path.exists(path):
                    os.unlink(path)


def host(cmd, **kw):
    """Runs a host command; returns CompletedProcess with text output."""
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def make_and_run(target):
    """Builds TARGET (a path under OUT) with the project's make and runs it."""
    r = host(["make", "--no-print-directory", "-C", TOP, target])
    assert r.returncode == 0, r.stderr
    return host([target])


# Our programs (src/) as the unit tests run them: the host build with
# ASan/UBSan, and the image's own static arm64 build under QEMU's user
# emulation. A parser of disk bytes can be right on one and wrong on the
# other (char is unsigned on arm64), so each module runs against both.
SRC_BUILDS = ("host", "arm64")
# Another architecture builds beside OUT: out/arm64, or OUT-arm64 beside a
# build folder of another name (make's arch_out).
ARM64_OUT = (os.path.join(TOP, "out", "arm64") if OUT == os.path.join(TOP, "out", "x86_64")
             else f"{OUT}-arm64")
# Debian 13's static qemu-aarch64, unpacked by make test (Debian 12's lacks openat2).
QEMU_AARCH64 = os.path.join(OUT, "build", "qemu-user", "usr", "bin", "qemu-aarch64")
IMAGE_PATHS = {"extscan": "sbin/extscan", "cmdline": "sbin/cmdline", "iobench": "sbin/iobench",
               "inroot": "lib/extrescue/disks/inroot", "authkeys": "lib/extrescue/net/authkeys",
               "report": "lib/extrescue/report/json", "http-put": "lib/extrescue/report/http-put",
               "syslog-forward": "lib/extrescue/syslog/forward"}


def src_program(name, build):
    """The command (a list) that runs our program NAME of BUILD (one of
    SRC_BUILDS), made first."""
    if build == "host":
        out = OUT
        path = os.path.join(out, "build", "src", "host", name)
        args, argv = [path], [path]
    else:
        out = ARM64_OUT
        path = os.path.join(out, "build", "src-root", IMAGE_PATHS[name])
        args, argv = ["EXTRESCUE_ARCH=arm64", f"OUT={out}", path], [QEMU_AARCH64, path]
        assert os.access(QEMU_AARCH64, os.X_OK), f"no {QEMU_AARCH64}; make test unpacks it (make {OUT}/stamps/qemu-user)"
    # One make at a time per build tree: two workers making the same program
    # at once (a plain pytest -n, before make test built it) would run a
    # half-written binary.
    os.makedirs(os.path.join(out, "build"), exist_ok=True)
    with open(os.path.join(out, "build", ".src-program.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = host(["make", "--no-print-directory", "-C", TOP, *args])
    assert r.returncode == 0, f"building {name} for {build}: {r.stderr[-2000:]}"
    return argv


def pe_section(data, name):
    """(file offset, size) of the PE section NAME in DATA, a PE file's bytes;
    the size is the section's own (objcopy pads its raw data to the file
    alignment)."""
    pe = struct.unpack_from("<I", data, 0x3c)[0]
    assert data[pe:pe + 4] == b"PE\0\0", "not a PE file"
    count, optional = struct.unpack_from("<H", data, pe + 6)[0], struct.unpack_from("<H", data, pe + 20)[0]
    for i in range(count):
        at = pe + 24 + optional + 40 * i
        if data[at:at + 8].rstrip(b"\0") == name.encode():
            vsize, _, rawsize, rawptr = struct.unpack_from("<IIII", data, at + 8)
            return rawptr, (min(vsize, rawsize) if vsize else rawsize)
    raise AssertionError(f"no PE section {name}")
