"""The network, only when asked: ip= (DHCP on virtio-net and e1000e, static
with a MAC as device, a VLAN on top, a pinned name), key-only SSH reached
through a port forwarded on 127.0.0.1, keys fetched from a URL, and every bad
value named in one line with the shell still there and nothing listening."""
import hashlib
import http.server
import json
import os
import re
import socket
import threading
import time

import subprocess

import pexpect
import pytest

from disks import damaged, fsck_clean, make_fs
from harness import SERIAL_CONSOLE, host, scaled

MAC = "52:54:00:12:34:56"
SSH_OPTS = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "ConnectTimeout=30",
            "-o", "LogLevel=ERROR"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def boot(guest, name, append, nics, disks=(), arch="x86_64", boot_timeout=120):
    args = ["--arch", arch, "--direct", "--mem", "768", "--append",
            f"console={SERIAL_CONSOLE[arch]},115200n8 " + append]
    for nic in nics:
        args += ["--nic", nic]
    for d in disks:
        args += ["--disk", f"{d},if=virtio-blk,rw"]
    g = guest(name, args, boot_timeout=boot_timeout)
    g.wait_shell()
    network_ready(g)
    return g


def network_ready(g):
    """The network is set up in the background; wait until that is over."""
    g.check("n=0; while [ ! -e /run/extrescue/net/ready ] && [ $n -lt 600 ]; do sleep 0.2; n=$((n+1)); done; "
            "[ -e /run/extrescue/net/ready ]", timeout=180)


def listening(g):
    """The TCP ports the guest listens on."""
    out = g.check("netstat -ltn")
    return sorted({int(m.group(1)) for m in re.finditer(r"^tcp6?\s+\d+\s+\d+\s+\S+:(\d+)\s", out, re.M)})


def keypair(folder, name):
    path = os.path.join(folder, name)
    r = host(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"test-{name}", "-f", path])
    assert r.returncode == 0, r.stderr
    with open(path + ".pub") as f:
        return path, f.read().strip()


def ssh(key, port, command, folder, extra=()):
    return host(["ssh", *SSH_OPTS, "-o", f"UserKnownHostsFile={folder}/known_hosts", "-i", key,
                 "-p", str(port), *extra, "root@127.0.0.1", command], timeout=scaled(120))


def serve(folder):
    """An HTTP server on 127.0.0.1 serving FOLDER; the guest reaches it as 10.0.2.2."""
    handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=folder)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("model", ["virtio-net-pci", "e1000e"])
def test_dhcp_address_in_banner(guest, model):
    g = boot(guest, f"net-dhcp-{model}", "ip=dhcp", [model])
    assert "10.0.2.15/24 by DHCP" in g.serial_log()
    banner = g.check("/lib/extrescue/boot/banner")
    assert re.search(r"eth0\s+52:54:00:[0-9a-f:]{8}\s+link up .*10\.0\.2\.15/24", banner), banner
    assert "default via 10.0.2.2 dev eth0" in g.check("ip route")
    assert "nameserver 10.0.2.3" in g.check("cat /etc/resolv.conf")
    assert listening(g) == [], "a DHCP boot without a key opened a port"
    g.assert_no_fatal()


def test_static_by_mac_vlan_and_pinned_name(guest, tmp_path):
    # A web server on the host proves the static address works end to end.
    (tmp_path / "hello").write_text("static works\n")
    server = serve(str(tmp_path))
    try:
        g = boot(guest, "net-static", f"ip=10.0.2.30::10.0.2.2:255.255.255.0:web1:{MAC}:none:10.0.2.3 "
                 "vlan=vlan7:lan0 ip=192.168.7.2:::24::vlan7:none ifname=lan0:" + MAC.upper(),
                 [f"virtio-net-pci,mac={MAC}"])
        assert "10.0.2.30/24" in g.check("ip -o -4 addr show dev lan0")
        assert g.check("hostname").strip() == "web1"
        vlans = g.check("cat /proc/net/vlan/config")
        assert re.search(r"^vlan7\s*\|\s*7\s*\|\s*lan0", vlans, re.M), vlans
        assert re.search(r"vlan7@lan0: <[^>]*\bUP\b", g.check("ip link show vlan7"))
        assert "192.168.7.2/24" in g.check("ip -o -4 addr show dev vlan7")
        got = g.check(f"wget -q -O - http://10.0.2.2:{server.server_address[1]}/hello")
        assert "static works" in got
    finally:
        server.shutdown()


def test_ssh_keys_only(guest, tmp_path):
    folder = str(tmp_path)
    key, pub = keypair(folder, "admin")
    other, _ = keypair(folder, "stranger")
    img = str(tmp_path / "data.img")
    make_fs(img, "64M")
    port = free_port()
    g = boot(guest, "net-ssh", f'ip=dhcp rescue.ssh_key="{pub}"', [f"virtio-net-pci,fwd={port}:22"], [img])
    said = re.search(r"SSH on port 22 for 1 key\(s\), root; host keys: ED25519 (SHA256:\S+), ECDSA (SHA256:\S+)",
                     g.serial_log())
    assert said, g.serial_log()[-2000:]
    assert listening(g) == [22]
    assert "ED25519 " + said.group(1) in g.check("/lib/extrescue/boot/banner")

    # The host key the client sees is the one the console printed. One
    # connection per key type the server has: every type at once (OpenSSH's
    # default) means five key exchanges in parallel, slow under TCG.
    scan = host(["ssh-keyscan", "-T", str(int(scaled(60))), "-t", "ed25519,ecdsa", "-p", str(port), "127.0.0.1"],
                timeout=scaled(180))
    fps = host(["ssh-keygen", "-lf", "-"], input=scan.stdout)
    assert said.group(1) in fps.stdout and said.group(2) in fps.stdout, (scan.stderr, fps.stdout)

    # Root gets the console's shell and tools.
    r = ssh(key, port, "extscan --json", folder)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == g.check("extscan --json").strip()

    # An undo file copied off with scp is the same file.
    g.check("tune2fs -z /tmp/label.e2undo -L renamed /dev/vda > /dev/null")
    inside = g.check("sha256sum /tmp/label.e2undo").split()[0]
    r = host(["scp", "-O", *SSH_OPTS, "-o", f"UserKnownHostsFile={folder}/known_hosts", "-i", key,
              "-P", str(port), "root@127.0.0.1:/tmp/label.e2undo", folder], timeout=scaled(120))
    assert r.returncode == 0, r.stderr
    with open(os.path.join(folder, "label.e2undo"), "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == inside

    # Another key is refused, and no password is ever asked for.
    r = ssh(other, port, "true", folder)
    assert r.returncode == 255 and "Permission denied (publickey)" in r.stderr, r.stderr
    r = ssh(key, port, "true", folder, ["-v", "-o", "PubkeyAuthentication=no"])
    assert r.returncode == 255
    offered = re.findall(r"Authentications that can continue: (\S+)", r.stderr)
    assert offered and all(o == "publickey" for o in offered), r.stderr[-1500:]
    g.assert_no_fatal()


def test_no_key_nothing_listens(guest):
    port = free_port()
    g = boot(guest, "net-nokey", "ip=dhcp", [f"virtio-net-pci,fwd={port}:22"])
    assert listening(g) == []
    # QEMU accepts on the host side; the guest has nothing behind it.
    r = host(["ssh-keyscan", "-T", "20", "-p", str(port), "127.0.0.1"], timeout=scaled(60))
    assert not r.stdout.strip()
    assert not g.run("test -e /run/dropbear.pid")[0] == 0


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Served:
    """serve() that also keeps the paths asked for."""

    def __init__(self, folder):
        asked = self.asked = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a):
                super().__init__(*a, directory=folder)

            def log_message(self, fmt, *a):
                asked.append(self.path)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://10.0.2.2:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_keys_fetched_from_url(guest, tmp_path):
    """Keys at a URL are taken only from the file its #sha256= pin names: a
    URL without a pin is not even fetched, a file whose sha256 differs
    (someone else answering) is refused, each with one line; with
    rescue.ssh_key_insecure=1 (here from the shell) an unpinned URL is taken,
    with a line that says what that means."""
    folder = str(tmp_path)
    key, pub = keypair(folder, "admin")
    unpinned, unpinned_pub = keypair(folder, "unpinned")
    forged, forged_pub = keypair(folder, "forged")
    (tmp_path / "keys").write_text(f"# the team's keys\n{pub}\nnot a key at all\n")
    (tmp_path / "plain").write_text(f"{unpinned_pub}\n")
    (tmp_path / "swapped").write_text(f"{forged_pub}\n")
    pin = sha256_of(tmp_path / "keys")
    served = Served(folder)
    port = free_port()
    try:
        url = f"{served.base}/keys"
        g = boot(guest, "net-keyurl",
                 f"ip=dhcp rescue.ssh_key={url}#sha256={pin.upper()} rescue.ssh_key={served.base}/plain "
                 f"rescue.ssh_key={served.base}/swapped#sha256={pin}", [f"virtio-net-pci,fwd={port}:22"])
        log = g.serial_log()
        assert f"rescue.ssh_key={url} line 3 is not a public key" in log, log[-1500:]
        assert (f"rescue.ssh_key={served.base}/plain has no #sha256= pin, so it is not fetched: whoever answers for "
                "that address would get a root shell") in log, log[-2000:]
        assert re.search(rf"rescue\.ssh_key={re.escape(served.base)}/swapped is refused: the file fetched has sha256 "
                         rf"{sha256_of(tmp_path / 'swapped')[:16]}\.\.\., the pin says {pin[:16]}\.\.\.", log), log[-2000:]
        assert "/plain" not in served.asked, served.asked
        assert "SSH on port 22 for 1 key(s)" in log
        r = ssh(key, port, "cat /etc/os-release", folder)
        assert r.returncode == 0 and "extrescue" in r.stdout, r.stderr
        for other in (unpinned, forged):
            r = ssh(other, port, "true", folder)
            assert r.returncode == 255 and "Permission denied (publickey)" in r.stderr, r.stderr

        # Accepting the risk takes the unpinned file, and says so.
        g.check("echo 1 > /run/extrescue/param/ssh_key_insecure")
        out = g.check(f"rescue-net ssh {served.base}/plain 2>&1", timeout=120)
        assert "taken without a pin (rescue.ssh_key_insecure=1): whoever answers for that address gets a root shell" \
            in out, out
        r = ssh(unpinned, port, "true", folder)
        assert r.returncode == 0, r.stderr
    finally:
        served.server.shutdown()


def test_repair_outlives_a_dropped_ssh_session(guest, tmp_path):
    """A repair started over SSH goes on when the connection drops in pass 1
    (the terminal hung up, its shell gone): the whole run and its summary are
    in rescue-fsck's log, the volume checks clean from the host, and its undo
    file takes the repair back."""
    folder = str(tmp_path)
    key, pub = keypair(folder, "admin")
    # Pass 1 reads every inode table: two million inodes, tens of thousands
    # in use, keep it going for a while under TCG.
    src = tmp_path / "many"
    for d in range(100):
        (src / f"d{d:02d}").mkdir(parents=True)
        for i in range(250):
            (src / f"d{d:02d}" / f"f{i:03d}").write_text(f"{d} {i}\n")
    big = str(tmp_path / "big.img")
    make_fs(big, "2G", label="xrbig", populate=str(src),
            options=["-N", "2000000", "-O", "^metadata_csum,^uninit_bg", "-E", "lazy_itable_init=0"])
    subprocess.run(["debugfs", "-w", "-R", "clri /d07/f123", big], check=True, capture_output=True)
    subprocess.run(["debugfs", "-w", "-R", "clri /d42/f007", big], check=True, capture_output=True)
    assert host(["e2fsck", "-fn", big]).returncode == 4
    original = str(tmp_path / "big.orig")
    subprocess.run(["cp", "--sparse=always", big, original], check=True)
    undo = str(tmp_path / "undo.img")
    make_fs(undo, "256M", label="xrundo")
    port = free_port()
    g = boot(guest, "net-ssh-drop", f'ip=dhcp rescue.ssh_key="{pub}"', [f"virtio-net-pci,fwd={port}:22"],
             [big, undo])
    g.check("mkdir -p /mnt/u && mount /dev/vdb /mnt/u")

    # -tt: a terminal, as an administrator's session has; stdin stays open.
    with open(tmp_path / "ssh.out", "wb") as out:
        client = subprocess.Popen(["ssh", *SSH_OPTS, "-o", f"UserKnownHostsFile={folder}/known_hosts", "-i", key,
                                   "-p", str(port), "-tt", "root@127.0.0.1",
                                   "rescue-fsck repair --undo-dir /mnt/u /dev/vda"],
                                  stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + scaled(180)
            while g.run("pidof e2fsck")[0] != 0:
                assert client.poll() is None, "ssh ended before e2fsck started: " + open(out.name).read()[-1500:]
                assert time.monotonic() < deadline, "e2fsck never started: " + open(out.name).read()[-1500:]
                time.sleep(1)
        finally:
            client.kill()
            client.wait()
    # The session is over on the guest too: only the listening dropbear is left.
    g.check("n=0; while [ $(pidof dropbear | wc -w) -gt 1 ] && [ $n -lt 60 ]; do sleep 1; n=$((n+1)); done; "
            "[ $(pidof dropbear | wc -w) -eq 1 ]", timeout=90)
    if g.run("pidof e2fsck")[0] != 0:
        over = g.run("[ -e /run/extrescue/rescue-fsck.status ]")[0] == 0
        pytest.fail("the repair was over before its session ended: make the volume bigger" if over else
                    "the repair died with its session: " + open(tmp_path / "ssh.out", errors="replace").read()[-1500:])
    # Logged in again, a second run is refused and points at the first one's log.
    status, out = g.run("rescue-fsck check /dev/vda")
    assert status == 2 and "another check or repair is still running" in out and \
        "tail -f /run/extrescue/rescue-fsck.log" in out, out
    # Until it ends, or dies with its session (then nothing runs it any more).
    g.check("n=0; while [ ! -e /run/extrescue/rescue-fsck.status ] && pgrep -f rescue-fsck > /dev/null && "
            "[ $n -lt 1200 ]; do sleep 1; n=$((n+1)); done", timeout=1300)
    assert g.run("[ -e /run/extrescue/rescue-fsck.status ]")[0] == 0, \
        "the repair died with its session: " + g.check("tail -c 1500 /run/extrescue/rescue-fsck.log; true")
    summary = g.check("sed -n '/rescue-fsck repair: summary/,$p' /run/extrescue/rescue-fsck.log")
    m = re.search(r"^/dev/vda\s+1\s+errors corrected \(undo: e2undo /mnt/u/(vda-\d{8}-\d{6}-0\.e2undo) /dev/vda\)",
                  summary, re.M)
    assert m, summary
    assert g.check("cat /run/extrescue/rescue-fsck.status").strip() == "1"
    g.check("umount /mnt/u")
    assert g.poweroff() == 0
    g.assert_no_fatal()

    fsck_clean(big)
    # The undo file is whole: it gives back the damaged volume byte for byte.
    saved = str(tmp_path / "repair.e2undo")
    subprocess.run(["debugfs", "-R", f"dump /{m.group(1)} {saved}", undo], check=True, capture_output=True)
    r = host(["e2undo", saved, big])
    assert r.returncode == 0, r.stdout + r.stderr
    assert host(["cmp", big, original]).returncode == 0, "e2undo did not give back the damaged volume"


def test_bad_network_values_are_named(guest, tmp_path):
    (tmp_path / "big").write_bytes(b"ssh-ed25519 " + b"A" * (10 << 20))
    pin = sha256_of(tmp_path / "big")
    server = serve(str(tmp_path))
    dead = free_port()
    try:
        http_port = server.server_address[1]
        g = boot(guest, "net-bad",
                 "ip=10.0.2.99:::255.0.255.0::eth0:none ip=dhcp:bogus vlan=nope ifname=x:zz nameserver=$(reboot) "
                 'rescue.ssh_key="ssh-ed25519 AAAAC3NzaC1lZDI1!!!! x" '
                 f"rescue.ssh_key=http://10.0.2.2:{http_port}/big#sha256={pin} "
                 f"rescue.ssh_key=http://10.0.2.2:{dead}/keys#sha256={pin} "
                 f"rescue.ssh_key=http://10.0.2.2:{http_port}/big#sha256={pin[:40]} "
                 "ip=eth9:dhcp ip=dhcp rescue.timeout=6",
                 ["virtio-net-pci"])
        log = g.serial_log()
        for line in ["ip=10.0.2.99:::255.0.255.0::eth0:none has no valid netmask",
                     "ip=dhcp:bogus asks for an address method other than dhcp",
                     "vlan=nope is not NAME:PARENT",
                     "ifname=x:zz is not NAME:MAC",
                     "nameserver=$(reboot) is not an IP address",
                     "rescue.ssh_key=<key 1> has key data that is not base64",
                     f"rescue.ssh_key=http://10.0.2.2:{http_port}/big is larger than 64 KiB",
                     f"rescue.ssh_key=http://10.0.2.2:{dead}/keys could not be fetched",
                     "no interface eth9",
                     "eth0: 10.0.2.15/24 by DHCP",
                     "no usable key in rescue.ssh_key=; the SSH server is not started"]:
            assert line in log, f"missing {line!r} in {log[-3000:]}"
        assert re.search(rf"rescue\.ssh_key=http://10\.0\.2\.2:{http_port}/big#sha256=\S* has a #sha256= pin that is "
                         r"not 64 hex digits; ignored", log), log[-3000:]
        assert listening(g) == []
        assert g.check("echo alive").strip() == "alive"
        g.assert_no_fatal()
    finally:
        server.shutdown()


class Collector:
    """An HTTP server on 127.0.0.1 that keeps every POSTed body."""

    def __init__(self):
        self.bodies = []
        bodies = self.bodies

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                bodies.append((self.headers.get("Content-Type"), self.rfile.read(length)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://10.0.2.2:{self.server.server_address[1]}/extrescue/report"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, seconds):
        end = time.monotonic() + seconds
        while not self.bodies and time.monotonic() < end:
            time.sleep(0.5)
        return self.bodies

    def close(self):
        self.server.shutdown()


# The documented fields of schema 1 (README, "The report") and their JSON types.
FIELDS = {"schema": int, "extrescue": str, "kernel": str, "architecture": str, "uptime_seconds": int, "machine": dict,
          "cmdline": str, "disks": list, "assembled": list, "extscan": list, "fsck": list,
          "ssh_host_keys": list, "errors": list, "messages": list}
MACHINE = {"id", "vendor", "product", "serial", "hostname", "interfaces"}
FSCK = {"mode", "device", "status", "meaning", "seconds", "undo_file", "undo_command"}


def valid_report(content_type, body):
    assert content_type == "application/json"
    doc = json.loads(body)
    assert {k: type(v) for k, v in doc.items()} == FIELDS, doc
    assert doc["schema"] == 1 and set(doc["machine"]) == MACHINE
    assert all(set(e) == FSCK for e in doc["fsck"])
    return doc


def test_report_after_an_unattended_repair(guest, tmp_path):
    folder = str(tmp_path)
    _, pub = keypair(folder, "admin")
    bad = damaged(tmp_path, "bad")
    undo = str(tmp_path / "undo.img")
    make_fs(undo, "64M", label="undo")
    collector = Collector()
    try:
        g = guest("net-report-repair", [
            "--direct", "--mem", "768", "--nic", "virtio-net-pci",
            "--disk", f"{bad},if=virtio-blk,rw", "--disk", f"{undo},if=virtio-blk,rw",
            "--append", f"console=ttyS0,115200n8 ip=dhcp rescue.ssh_key=\"{pub}\" rescue.report={collector.url} "
                        "rescue.fsck=repair rescue.devices=vda rescue.undo=LABEL=undo rescue.after=poweroff"],
            boot_timeout=300)
        g.expect([pexpect.EOF], scaled(300), "the unattended repair to power off")
        assert f"report sent to {collector.url}" in g.serial_log()
        assert len(collector.bodies) == 1, "not exactly one report for the boot"
        content_type, body = collector.bodies[0]
        doc = valid_report(content_type, body)
        entry = [e for e in doc["fsck"] if e["device"] == "/dev/vda"]
        assert entry and entry[0]["mode"] == "repair" and entry[0]["status"] & 1, doc["fsck"]
        assert re.fullmatch(r"e2undo /run/undo-disk/extrescue-undo/vda-\d{8}-\d{6}-0\.e2undo /dev/vda",
                            entry[0]["undo_command"]), entry
        assert any(d["label"] == "bad" for d in doc["extscan"] if "label" in d)
        assert {"name": "eth0"}.items() <= doc["machine"]["interfaces"][0].items()
        assert "10.0.2.15/24" in doc["machine"]["interfaces"][0]["addresses"]
        assert "rescue.ssh_key=<removed>" in doc["cmdline"]
        said = re.search(r"host keys: (ED25519 SHA256:\S+), (ECDSA SHA256:\S+)", g.serial_log())
        assert said and doc["ssh_host_keys"] == [said.group(1), said.group(2)], doc["ssh_host_keys"]
        blob = pub.split()[1]
        assert blob[:20].encode() not in body and blob[-20:].encode() not in body, "key text in the report"
    finally:
        collector.close()


def test_report_of_a_bare_boot_and_a_collector_that_is_down(guest):
    collector = Collector()
    try:
        g = boot(guest, "net-report-bare", f"ip=dhcp rescue.report={collector.url}", ["virtio-net-pci"])
        doc = valid_report(*collector.wait(scaled(120))[0])
        assert doc["fsck"] == [] and doc["cmdline"].startswith("console=ttyS0")
        time.sleep(3)
        assert len(collector.bodies) == 1
        g.kill()
    finally:
        collector.close()
    # Nobody listens: the power-off still comes within the timeout.
    dead = free_port()
    g = guest("net-report-down", ["--direct", "--mem", "768", "--nic", "virtio-net-pci", "--append",
                                  f"console=ttyS0,115200n8 ip=dhcp rescue.report=http://10.0.2.2:{dead}/r "
                                  "rescue.timeout=8 rescue.after=poweroff"])
    started = time.monotonic()
    g.expect([r"report to http://10\.0\.2\.2:\d+/r not sent within 8 s"], scaled(120), "the report's give-up line")
    g.expect([pexpect.EOF], scaled(30), "the power-off after the report gave up")
    assert time.monotonic() - started < scaled(60)
