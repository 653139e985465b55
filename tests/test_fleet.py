"""A fleet checked from one netboot tree, its findings where the operators
look: three machines (a clean, a damaged and a crashed volume) boot by iPXE
with rescue.fsck=check, post their JSON reports, push their metrics to a
Pushgateway that a Prometheus scrapes (the netboot folder's alert rules
loaded), send every line they say to an rsyslog, and power off; the fleet
page is opened in headless Chromium. Then the same check with the
Pushgateway and the syslog server not answering. All servers are Debian's,
on 127.0.0.1 (tests/fleet_servers.py); the guests see the host as 10.0.2.2."""
import json
import os
import shutil
import socket
import threading
import time
from html.parser import HTMLParser

import pexpect

from disks import damaged, make_fs, sha256_file
from fleet_servers import Prometheus, Pushgateway, Rsyslog, free_port
from harness import LOGS, SERIAL_CONSOLE, TOP, host, power_cut, scaled
from test_netboot import NETBOOT, Server

ALERTS = os.path.join(NETBOOT, "extrescue-alerts.yml")


def crashed(guest, tmp_path):
    """An ext4 volume cut off with its journal full of committed writes."""
    img = str(tmp_path / "crashed.img")
    make_fs(img, "64M", label="crashed", options=["-b", "4096"])
    power_cut(guest, "netboot-fleet-crash", img,
              "mount /dev/vda /mnt && for i in 1 2 3; do seq 50000 > /mnt/f$i; done && sync")
    return img


class Queryable(threading.Thread):
    """Polls Prometheus until MACHINE's metrics answer a query; .seconds is
    then the time since START (QEMU's start)."""

    def __init__(self, prometheus, machine, start):
        super().__init__(daemon=True)
        self.prometheus, self.machine, self.start_time = prometheus, machine, start
        self.seconds, self.stop = None, threading.Event()
        self.start()

    def run(self):
        while not self.stop.is_set():
            try:
                if self.prometheus.query(f'extrescue_build_info{{machine="{self.machine}"}}'):
                    self.seconds = time.monotonic() - self.start_time
                    return
            except OSError:
                pass
            time.sleep(0.25)


class Rows(HTMLParser):
    """The fleet page's machine rows as Chromium left the DOM: verdict and text."""

    def __init__(self):
        super().__init__()
        self.rows, self.depth = [], 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "machine" in (a.get("class") or "").split():
            self.rows.append([a.get("data-verdict"), ""])
            self.depth = 1
        elif tag == "tr":
            self.depth = 0

    def handle_data(self, data):
        if self.depth and self.rows:
            self.rows[-1][1] += data


def chromium(args, timeout=120):
    return host(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--hide-scrollbars", *args], timeout=scaled(timeout))


def test_fleet_check_reports_pushes_and_logs(guest, tmp_path):
    """Three machines boot the same tree by iPXE with an unattended check and
    power off; the report, the metrics and the syslog lines of each are told
    apart by its serial number, and agree."""
    clean = str(tmp_path / "clean.img")
    make_fs(clean, "32M", label="clean")
    disks = {"clean": clean, "damaged": damaged(tmp_path, "damaged"), "crashed": crashed(guest, tmp_path)}
    # The clean machine's disk on AHCI: QEMU's ATA disk answers SMART.
    controllers = {"clean": "ahci", "damaged": "virtio-blk", "crashed": "virtio-blk"}
    before = {k: sha256_file(v) for k, v in disks.items()}
    tree = tmp_path / "netboot"
    shutil.copytree(NETBOOT, tree)
    servers = tmp_path / "servers"
    servers.mkdir()
    pushgateway = Pushgateway(str(servers))
    prometheus = Prometheus(str(servers), pushgateway, ALERTS)
    rsyslog = Rsyslog(str(servers))
    s = Server(str(tree))
    machines = {}
    try:
        for n, (name, img) in enumerate(disks.items(), start=1):
            mac, serial = f"52:54:00:00:0f:0{n}", f"XR-FLEET-{n}"
            # One machine's syslog by UDP, the others' by TCP.
            syslog = f"10.0.2.2:{rsyslog.udp}" if name == "clean" else f"10.0.2.2:{rsyslog.tcp},tcp"
            # What an administrator puts beside extrescue.ipxe for a fleet run.
            (tree / f"fleet-{name}.ipxe").write_text(
                "#!ipxe\nset extrescue_entry check\n"
                f"set extrescue_args rescue.report={s.base}/collect rescue.metrics={pushgateway.guest_url} "
                f"rescue.syslog={syslog} rescue.after=poweroff\n"
                "chain extrescue.ipxe\n")
            g = guest(f"netboot-fleet-{name}", [
                "--mem", "768", "--netboot", f"{s.base}/fleet-{name}.ipxe", "--nic", f"virtio-net-pci,mac={mac}",
                "--disk", f"{img},if={controllers[name]},rw", "--", "-smbios", f"type=1,serial={serial}"],
                boot_timeout=300)
            poll = Queryable(prometheus, serial, g.started)
            g.expect([pexpect.EOF], scaled(300), "the fleet check to power off")
            g.assert_no_fatal()
            poll.join(scaled(30))
            poll.stop.set()
            arrived = [p for p in s.posts if p[0] > g.started]
            assert len(arrived) == 1, f"{name}: {len(arrived)} reports"
            assert arrived[0][1] == "application/json", arrived[0][1]
            assert poll.seconds, f"{name}: its metrics never answered a query"
            machines[name] = (mac, serial, json.loads(arrived[0][2]), g)
            print(f"fleet {name}: report {arrived[0][0] - g.started:.1f} s, metrics queryable {poll.seconds:.1f} s "
                  f"after QEMU started")
        check_reports(machines)
        check_metrics(prometheus, machines)
        check_syslog(rsyslog, machines)
        check_page(tmp_path, machines)
    finally:
        s.close()
        for server in (prometheus, pushgateway, rsyslog):
            server.stop()
    # A check writes nothing: not the damage, not the journal.
    assert {k: sha256_file(v) for k, v in disks.items()} == before
    assert "needs_recovery" in host(["dumpe2fs", "-h", disks["crashed"]]).stdout


def check_reports(machines):
    verdicts = {}
    for name, (mac, serial, doc, _) in machines.items():
        assert doc["machine"]["serial"] == serial and doc["machine"]["id"] == serial, doc["machine"]
        assert [i["mac"] for i in doc["machine"]["interfaces"]] == [mac], doc["machine"]["interfaces"]
        assert "rescue.fsck=check" in doc["cmdline"] and f"BOOTIF=01-{mac.replace(':', '-')}" in doc["cmdline"]
        verdicts[name] = [(e["mode"], e["device"], e["status"]) for e in doc["fsck"]]
    assert verdicts == {"clean": [("check", "/dev/sda", 0)], "damaged": [("check", "/dev/vda", 4)],
                        "crashed": [("check", "/dev/vda", 0)]}, verdicts
    sda = [d for d in machines["clean"][2]["disks"] if d["name"] == "sda"][0]
    assert sda["health"] == "passed" and sda["reallocated_sectors"] == 0 and sda["io_errors"] == 0, sda


def check_metrics(prometheus, machines):
    """What PromQL answers is what each JSON report says; the damaged
    machine's alert fires, and only it."""
    got = {}
    for labels, value in prometheus.query('extrescue_fsck_exit_status{job="extrescue"}'):
        got.setdefault(labels["machine"], []).append((labels["mode"], labels["device"], int(value)))
    want = {serial: [(e["mode"], e["device"], e["status"]) for e in doc["fsck"]]
            for _, serial, doc, _ in machines.values()}
    assert got == want, (got, want)
    left = {labels["machine"] for labels, _ in prometheus.query("extrescue_fsck_errors_uncorrected == 1")}
    assert left == {machines["damaged"][1]}, left
    clean_serial = machines["clean"][1]
    health = prometheus.query(f'extrescue_disk_health_ok{{machine="{clean_serial}",disk="sda"}}')
    assert [v for _, v in health] == [1.0], health
    for _, serial, doc, _ in machines.values():
        version = prometheus.query(f'extrescue_build_info{{machine="{serial}"}}')
        assert [labels["version"] for labels, _ in version] == [doc["extrescue"]], version
    r = host(["promtool", "check", "rules", ALERTS])
    assert r.returncode == 0, r.stdout + r.stderr
    end = time.monotonic() + scaled(30)
    while time.monotonic() < end:
        firing = {(a["labels"]["alertname"], a["labels"]["machine"], a["labels"].get("device"))
                  for a in prometheus.alerts() if a["state"] == "firing"}
        if firing:
            break
        time.sleep(0.5)
    assert firing == {("ExtrescueVolumeErrorsLeft", machines["damaged"][1], "/dev/vda")}, firing


def check_syslog(rsyslog, machines):
    """Each machine's lines, under its serial, numbered 1, 2, 3... without a
    gap, hold what its report says was said, in order, and end with the
    line said at power-off."""
    time.sleep(1)
    lines = rsyslog.lines()
    for name, (_, serial, doc, _) in machines.items():
        mine = [(seq, text) for host_name, app, seq, text in lines if host_name == serial]
        assert mine and all(app == "extrescue" for h, app, _, _ in lines if h == serial), (name, lines[:5])
        assert [seq for seq, _ in mine] == list(range(1, len(mine) + 1)), (name, [seq for seq, _ in mine])
        texts = iter(text for _, text in mine)
        for said in doc["messages"]:
            assert any(t == said for t in texts), f"{name}: {said!r} not sent in order"
        assert mine[-1][1].startswith("extrescue: shutting down after "), (name, mine[-3:])
        assert any("summary" in t.lower() or "clean" in t or "errors" in t for _, t in mine), name


def check_page(tmp_path, machines):
    """The fleet page from the three reports, in headless Chromium: a row
    per machine with its verdict; its screenshot is kept in the test logs."""
    reports = tmp_path / "reports"
    reports.mkdir()
    for _, serial, doc, _ in machines.values():
        (reports / f"report-{serial}.json").write_text(json.dumps(doc, indent=1))
    page = reports / "fleet.html"
    r = host([os.path.join(TOP, "scripts", "fleet-page"), str(reports)])
    assert r.returncode == 0, r.stderr
    page.write_text(r.stdout)
    print(f"fleet page: {page.stat().st_size} bytes for {len(machines)} machines")
    os.makedirs(LOGS, exist_ok=True)
    shot = os.path.join(LOGS, "fleet-page.png")
    r = chromium([f"--screenshot={shot}", "--window-size=412,915", page.as_uri()])
    assert os.path.getsize(shot) > 1000 and open(shot, "rb").read(8) == b"\x89PNG\r\n\x1a\n", r.stderr[-2000:]
    r = chromium(["--dump-dom", page.as_uri()])
    assert r.returncode == 0, r.stderr[-2000:]
    rows = Rows()
    rows.feed(r.stdout)
    by_serial = {serial: name for name, (_, serial, _, _) in machines.items()}
    seen = {}
    for verdict, text in rows.rows:
        serial = [s for s in by_serial if s in text]
        assert len(serial) == 1, text
        seen[by_serial[serial[0]]] = (verdict, " ".join(text.split()))
    assert {k: v[0] for k, v in seen.items()} == {"clean": "clean", "damaged": "errors-left",
                                                  "crashed": "clean"}, seen
    assert "errors left" in seen["damaged"][1] and "/dev/vda" in seen["damaged"][1], seen["damaged"]
    assert "/dev/sda" in seen["clean"][1] and "clean" in seen["clean"][1], seen["clean"]


class Silent:
    """A TCP server that takes connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port, self.held = self.sock.getsockname()[1], []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self):
        for c in self.held:
            c.close()
        self.sock.close()


def test_fleet_check_with_its_servers_down(guest, tmp_path):
    """A Pushgateway that never answers and a syslog port nobody listens on:
    each costs one line, the check still runs and the machine powers off
    within rescue.timeout= of its work."""
    img = str(tmp_path / "clean.img")
    make_fs(img, "32M", label="clean")
    silent, closed = Silent(), free_port()
    try:
        g = guest("fleet-servers-down", [
            "--direct", "--mem", "768", "--nic", "virtio-net-pci", "--disk", f"{img},if=virtio-blk,rw",
            "--append", f"console={SERIAL_CONSOLE['x86_64']},115200n8 ip=dhcp rescue.fsck=check "
            f"rescue.after=poweroff rescue.timeout=8 rescue.metrics=http://10.0.2.2:{silent.port} "
            f"rescue.syslog=10.0.2.2:{closed},tcp"], boot_timeout=180)
        g.expect([pexpect.EOF], scaled(180), "the check to power off with its servers down")
        took = time.monotonic() - g.started
    finally:
        silent.close()
    g.assert_no_fatal()
    log = g.serial_log()
    assert "/dev/vda" in log and "clean" in log, log[-3000:]
    assert log.count(f"metrics to http://10.0.2.2:{silent.port} not pushed within 8 s") == 1, log[-3000:]
    assert log.count(f"syslog server 10.0.2.2:{closed} (tcp) not reachable") == 1, log[-3000:]
    assert "shutting down after" in log
    # The boot and check take seconds; the metrics' wait is rescue.timeout=
    # (8 s), the syslog server's none: well within a minute even under load.
    assert took < scaled(60), f"powered off {took:.1f} s after QEMU started"
    print(f"fleet with servers down: powered off {took:.1f} s after QEMU started")


def test_readme_rsyslog_configuration_is_valid(tmp_path):
    """The README's rsyslog lines, as an administrator pastes them, pass
    rsyslogd's own check (-N1), and the file name they build stays in its folder."""
    readme = open(os.path.join(TOP, "README.md")).read()
    block = readme.split("For rsyslog, listening on both:\n\n", 1)[1].split("\n\n", 1)[0]
    lines = [line[4:] for line in block.splitlines()]
    assert any("secpath-replace" in line for line in lines), lines
    conf = tmp_path / "extrescue.conf"
    conf.write_text(f'global(workDirectory="{tmp_path}")\n' + "\n".join(lines) + "\n")
    r = host(["rsyslogd", "-N1", "-f", str(conf)])
    assert r.returncode == 0, r.stdout + r.stderr
