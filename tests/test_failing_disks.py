"""A failing disk on every controller of the README: an ext4 volume whose
inode table cannot be read at two sectors (QEMU's blkdebug answers EIO to
every read there), checked by qemu/smoke. The guest stays up, smoke exits 1,
and its report names the disk, the bad sectors and the checks that failed;
the host's image is unchanged. On QEMU's ESP model (am53c974, dc390) a read
that failed is never answered: each costs the guest's kernel its command
timeouts, and smoke's bound on a disk's battery stops it. On QEMU's
lsi53c895a and lsi53c810 models the guest's kernel comes down instead
(README, "Failing disks"): smoke says so, with the oops in symbols, and
names the model's fault. rescue-fsck check on the same disk names the
unreadable blocks and powers off. make test-failing."""
import http.server
import json
import os
import re
import subprocess
import threading
import time

import pexpect
import pytest

from disks import sha256_file, tree_fs
from harness import OUT, SERIAL_CONSOLE, SMP, TOP, host, scaled

SMOKE = f"{TOP}/qemu/smoke"
# (qemu/run controller, extra disk options): every one test_controllers boots
# but mptsas1068 (no disk appears on it at all) and sdhci (a card of a power
# of two; its own row would need a second image size).
CONTROLLERS = ["virtio-blk", "virtio-scsi", "nvme", "ahci", "ide", "lsi53c895a", "megasas", "megasas-gen2",
               "pvscsi", "am53c974", "lsi53c810", "dc390", "usb-xhci", "usb-ehci", "usb-uhci", "usb-ohci",
               "usb-uas"]
# QEMU 7.2's model of these two chips brings the guest's kernel (or QEMU) down on a read error.
QEMU_LSI = ("lsi53c895a", "lsi53c810")
# QEMU 7.2's ESP model never answers a read that failed.
QEMU_ESP = ("am53c974", "dc390")
SECONDS = 1
# qemu/smoke's default bound on one disk's battery (20 * SECONDS + 90), as slow as the host.
DISK_TIMEOUT = round(scaled(20 * SECONDS + 90))
GUEST_TIMEOUT = round(scaled(420))
# The matrix's table, a row a controller, printed at the end of make test-failing.
TABLE = os.path.join(OUT, "failing-matrix.tsv")


def table_row(ctrl, seconds, outcome, named):
    with open(TABLE, "a") as f:
        f.write(f"{ctrl}\t{outcome}\t{seconds:.0f}\t{named}\n")


def row_of(said, result):
    """(outcome, what was named) of one smoke run, for the table."""
    if "the guest's kernel panicked" in said:
        m = re.search(r"the guest's kernel: .*?; at ([^;\s]+)", said)
        return "panicked", f"oops at {m.group(1) if m else '?'}; QEMU's model named"
    if result is None:
        m = re.search(r"lsi53c895a\.c:\d+: (\w+): Assertion", said)
        last = said.strip().splitlines()[-1:] or ["no word"]
        return "no result", f"QEMU's assertion in {m.group(1)}" if m else last[0][:80]
    if len(result["disks"]) != 1 or result["disks"][0]["guest"] is None:
        return "up", "the disk was not found"
    (disk,) = result["disks"]
    checks, stall = disk["checks"], disk["guest"]["stalled"]
    failed = ", ".join(c for c, v in checks.items() if not v["ok"])
    if stall:
        return "up", f"stopped at {stall['step']} after {stall['seconds']} s; failed: {failed}"
    return "up", f"{checks['read']['detail'].split(':')[0]}; failed: {failed}"


def inode_sector(img, path):
    """The 512-byte sector of IMG that holds PATH's inode (debugfs imap)."""
    out = subprocess.run(["debugfs", "-R", f"imap {path}", img], capture_output=True, text=True).stdout
    block = int(re.search(r"located at block (\d+)", out).group(1))
    bs = int(re.search(r"Block size:\s+(\d+)", subprocess.run(["dumpe2fs", "-h", img], capture_output=True,
                                                               text=True).stdout).group(1))
    return block * bs // 512


class PushCapture:
    """A stand-in Pushgateway on 127.0.0.1: keeps each PUT's path and body."""

    def __init__(self):
        self.bodies = []
        bodies = self.bodies

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_PUT(self):
                bodies.append((self.path, self.rfile.read(int(self.headers["Content-Length"])).decode()))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    """An ext4 image and the blkdebug rules that fail two sectors of its inode table."""
    d = tmp_path_factory.mktemp("failing")
    img = tree_fs(str(d), "64M")
    bad = sorted({inode_sector(img, "/"), inode_sector(img, "/dir3/file039")})
    assert len(bad) == 2, bad
    rules = d / "inode-table.conf"
    rules.write_text("".join(f'[inject-error]\nevent = "read_aio"\nerrno = "5"\nsector = "{s}"\n'
                             'iotype = "read"\nonce = "off"\n\n' for s in bad))
    return img, str(rules), bad


@pytest.mark.failing_matrix
@pytest.mark.parametrize("ctrl", CONTROLLERS)
def test_failing_disk_on_every_controller(failing, tmp_path, ctrl):
    img, rules, bad = failing
    before = sha256_file(img)
    out = tmp_path / "smoke.json"
    start = time.monotonic()
    r = host([SMOKE, "--seconds", str(SECONDS), "--disk-timeout", str(DISK_TIMEOUT), "--smp", SMP,
              "--timeout", str(GUEST_TIMEOUT), "--json", str(out), "--disk", f"{img},if={ctrl},blkdebug={rules}"],
             timeout=GUEST_TIMEOUT + scaled(120))
    said = r.stdout + r.stderr
    table_row(ctrl, time.monotonic() - start, *row_of(said, json.loads(out.read_text()) if out.exists() else None))
    assert sha256_file(img) == before, f"{ctrl}: the host's image changed"
    if ctrl in QEMU_LSI:
        assert r.returncode == 2 and "QEMU's lsi53c895a model" in said, said[-3000:]
        if "the guest's kernel panicked" in said:
            # Symbolic, and where the model's fault shows: the driver's interrupt handler.
            assert re.search(r"the guest's kernel: .*; at \w+\+0x[0-9a-f]+/0x[0-9a-f]+", said), said[-3000:]
            assert "sym_interrupt" in said, said[-3000:]
        else:
            # Or QEMU's model stops on its own assertion first (lsi53c810 here).
            assert re.search(r"lsi53c895a\.c:\d+: lsi_soft_reset: Assertion", said), said[-3000:]
        return
    assert r.returncode == 1, f"{ctrl}: smoke exited {r.returncode}:\n{said[-3000:]}"
    result = json.loads(out.read_text())
    assert result["passed"] is False and result["guest_kernel_trouble"] == [], result
    (disk,) = result["disks"]
    checks = disk["checks"]
    assert checks["found"]["ok"] and checks["size"]["ok"], checks
    # SCSI disks carry rescue.scsi_timeout='s default and fewer retries; NVMe and virtio-blk are no SCSI.
    scsi = ctrl not in ("virtio-blk", "nvme")
    assert (disk["guest"]["scsi_timeout"], disk["guest"]["scsi_retries"]) == ((15, 2) if scsi else (None, None)), \
        disk["guest"]
    failed = {c for c, v in checks.items() if not v["ok"]}
    if ctrl in QEMU_ESP:
        esp_row(result, disk, bad)
        return
    assert disk["guest"]["stalled"] is None, disk["guest"]
    # e2fsck -fn cannot read the inode table; the battery's sequential read
    # stops at the first bad sector and names it (to its 4 KiB).
    first = bad[0] - bad[0] % 8
    assert {"ext", "read"} <= failed, checks
    # Both bad sectors are in the first MiB: it does not read, it is not "different".
    assert checks["first MiB"]["detail"] == "unreadable: a read error in it", checks["first MiB"]
    assert f"at sector {first}" in checks["read"]["detail"], checks["read"]
    assert f"{disk['host']['path']}: read: sequential read error at sector {first}" in r.stdout, r.stdout


def esp_row(result, disk, bad):
    """The ESP's rows: the battery stopped at its bound, at the step it was
    on, and the guest powered off soon after; the kernel's lines name the
    timed-out command and a read that failed where the bad sectors are."""
    stall, checks = disk["guest"]["stalled"], disk["checks"]
    assert stall and stall["seconds"] == DISK_TIMEOUT, disk["guest"]
    stuck = [c for c, v in checks.items() if v["detail"].startswith(f"no answer within {DISK_TIMEOUT} s")]
    assert len(stuck) == 1, checks
    assert result["seconds"] < result["guest_boot_seconds"] + DISK_TIMEOUT + scaled(90), result["seconds"]
    log = disk["guest"]["kernel_log"]
    assert any("timing out command" in line for line in log), log
    # The kernel names the failed request by its first sector: one that holds the first bad one.
    starts = [int(m.group(1)) for line in log for m in [re.search(r"I/O error dev \w+ sector (\d+)", line)] if m]
    assert any(s <= bad[0] < s + 2048 for s in starts), log


@pytest.mark.failing_matrix
@pytest.mark.parametrize("ctrl", ["virtio-scsi", "ahci", "megasas", "nvme"])
def test_rescue_fsck_check_names_what_does_not_read(failing, guest, ctrl):
    """rescue.fsck=check on the failing disk: e2fsck -fn cannot read the inode
    table; the summary says so with the blocks and what to do, the guest
    powers off, and the host's image is unchanged."""
    img, rules, bad = failing
    before = sha256_file(img)
    pushed = PushCapture()
    try:
        g = guest(f"fsck-check-{ctrl}", ["--direct", "--append", f"console={SERIAL_CONSOLE['x86_64']},115200n8 "
                                         f"rescue.fsck=check rescue.after=poweroff ip=dhcp "
                                         f"rescue.metrics=http://10.0.2.2:{pushed.port}", "--nic", "virtio-net-pci",
                                         "--disk", f"{img},if={ctrl},blkdebug={rules}"], boot_timeout=180)
        g.expect([pexpect.EOF], scaled(180), "the check to power off")
    finally:
        pushed.close()
    g.assert_no_fatal()
    log = g.serial_log()
    # Its metrics (rescue.metrics=) say the same: the check did not finish,
    # the kernel logged I/O errors for the disk; AHCI and NVMe disks answer
    # for their health.
    assert len(pushed.bodies) == 1, (pushed.bodies, log[-2000:])
    path, body = pushed.bodies[0]
    assert path.startswith("/metrics/job/extrescue/machine/"), path
    m = re.search(r'^extrescue_fsck_exit_status\{device="(/dev/\w+)",mode="check"\} 8$', body, re.M)
    assert m and re.search(rf'^extrescue_fsck_completed\{{device="{m.group(1)}",mode="check"\}} 0$', body, re.M), body
    disk = m.group(1)[5:]      # the image is one ext4, no partition table
    errors = re.search(rf'^extrescue_disk_io_errors_total\{{disk="{disk}"\}} (\d+)$', body, re.M)
    assert errors and int(errors.group(1)) > 0, body
    if ctrl in ("ahci", "nvme"):
        assert re.search(rf'^extrescue_disk_health_ok\{{disk="{disk}"\}} 1$', body, re.M), body
    blocks = sorted({s // 2 for s in bad})     # a 64 MiB ext4 has 1 KiB blocks
    m = re.search(r"^(/dev/\w+) +8 +operational error \(read errors at block ([\d ]+): copy the disk with "
                  r"ddrescue and repair the copy\)", log, re.M)
    assert m, log[-3000:]
    assert int(m.group(2).split()[0]) in blocks, (m.group(0), blocks)
    assert sha256_file(img) == before, f"{ctrl}: the host's image changed"
