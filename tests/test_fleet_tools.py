"""The fleet tools against real servers on 127.0.0.1 (the host build with
ASan/UBSan, and the image's arm64 build): syslog-forward's RFC 5424 over
UDP and TCP, what it says when the server is away and back, its bounded
stop; http-put's PUT, its one-line errors and its timeout."""
import http.server
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

from harness import SRC_BUILDS, host, scaled, src_program

# <PRI>VERSION TIMESTAMP HOSTNAME APP-NAME PROCID MSGID [meta][origin] MSG
RFC5424 = re.compile(r'<29>1 (?P<stamp>-|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z) (?P<host>[!-~]{1,64}) extrescue - - '
                     r'\[meta sequenceId="(?P<seq>\d+)"\]'
                     r'(?:\[origin software="extrescue" swVersion="(?P<version>(?:[^"\\\]]|\\["\\\]])*)"\])? '
                     r'(?P<msg>[ -~]*)')


@pytest.fixture(scope="module", params=SRC_BUILDS)
def forward(request):
    return src_program("syslog-forward", request.param)


@pytest.fixture(scope="module", params=SRC_BUILDS)
def http_put(request):
    return src_program("http-put", request.param)


def parse(message):
    m = RFC5424.fullmatch(message.decode("ascii"))
    assert m, message
    return m


def append(path, data):
    with open(path, "ab") as f:
        f.write(data)


def stop(proc, within):
    """SIGTERM; the seconds until PROC exited, asserted below WITHIN, and
    its stderr."""
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=within + 2)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"still running {within + 2} s after SIGTERM")
    took = time.monotonic() - start
    assert proc.returncode == 0 and took < within, (proc.returncode, took, err)
    return err


def start(cmd, *args):
    return subprocess.Popen([*cmd, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_until(what, seconds):
    end = time.monotonic() + scaled(seconds)
    while time.monotonic() < end:
        if what():
            return True
        time.sleep(0.05)
    return False


class Sink(threading.Thread):
    """A TCP syslog server of one connection: takes all it is sent, closes
    when the sender does."""

    def __init__(self, listener):
        super().__init__(daemon=True)
        self.listener, self.data, self.closed = listener, b"", False
        self.start()

    def run(self):
        self.listener.settimeout(scaled(10))
        conn, _ = self.listener.accept()
        with conn:
            while chunk := conn.recv(65536):
                self.data += chunk
        self.closed = True

    def frames(self):
        """The messages so far, checked as octet-counted (RFC 6587)."""
        data, frames = self.data, []
        while (m := re.match(rb"([1-9]\d*) ", data)) and len(data) >= m.end() + int(m[1]):
            frames.append(data[m.end():m.end() + int(m[1])])
            data = data[m.end() + int(m[1]):]
        assert re.fullmatch(rb"(\d{1,5}( .*)?)?", data, re.S), data[:100]
        return frames

    def wait_frames(self, count, seconds):
        assert wait_until(lambda: len(self.frames()) >= count, seconds), self.data[-300:]
        return self.frames()


def test_udp_lines_in_order_made_safe(forward, tmp_path):
    said, state = tmp_path / "said", tmp_path / "pid"
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    server.settimeout(scaled(5))
    version = 'v"1\\]x\x1b' + "y" * 40
    proc = start(forward, "--hostname", "web 1\x1bé", "--version", version, "--state", str(state),
                 f"127.0.0.1:{server.getsockname()[1]}", str(said))
    # The file comes later, and grows while followed.
    assert wait_until(lambda: state.exists() and state.read_text() == f"{proc.pid}\n", 3), "no --state"
    append(said, b"first\n")
    first = server.recv(4096)
    append(said, b"\x1b[31mred\x07bell\n\n\nutf8 \xc3\xa9\n" + b"x" * 5000 + b"\nnext\n")
    got = [first] + [server.recv(4096) for _ in range(4)]
    stop(proc, 3)
    parsed = [parse(g) for g in got]
    assert [p["msg"] for p in parsed] == ["first", "?[31mred?bell", "utf8 ??", "x" * 1024, "next"]
    assert [int(p["seq"]) for p in parsed] == [1, 2, 3, 4, 5]
    assert {p["host"] for p in parsed} == {"web_1___"}
    # This host's clock is set: a real time, not the NILVALUE.
    assert all(p["stamp"] != "-" for p in parsed)
    unescaped = re.sub(r"\\(.)", r"\1", parsed[0]["version"])
    assert unescaped == ('v"1\\]x?' + "y" * 40)[:32]


def test_tcp_octet_counting_and_last_line_on_stop(forward, tmp_path):
    said = tmp_path / "said"
    said.write_bytes(b"one\ntwo ] \" \\ \n")
    listener = socket.create_server(("127.0.0.1", 0))
    sink = Sink(listener)
    proc = start(forward, "--tcp", "--hostname", "", f"127.0.0.1:{listener.getsockname()[1]}", str(said))
    sink.wait_frames(2, 5)
    append(said, b"tail without newline")
    # Before the stop, a line without its newline waits.
    time.sleep(0.3)
    assert len(sink.frames()) == 2
    stop(proc, 3)
    sink.join(scaled(5))
    parsed = [parse(f) for f in sink.frames()]
    assert sink.closed and sink.data.endswith(b"tail without newline")
    assert [p["msg"] for p in parsed] == ["one", 'two ] " \\ ', "tail without newline"]
    assert [int(p["seq"]) for p in parsed] == [1, 2, 3]
    assert parsed[0]["host"] == "-" and parsed[0]["version"] is None


def test_tcp_server_away_then_back(forward, tmp_path):
    said = tmp_path / "said"
    said.write_bytes(b"early 1\nearly 2\n")
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    proc = start(forward, "--tcp", f"127.0.0.1:{port}", str(said))
    down = f"extrescue: syslog server 127.0.0.1:{port} (tcp) not reachable: Connection refused; lines kept in {said}"
    assert wait_until(lambda: down in said.read_text(), 3), said.read_text()
    append(said, b"while away\n")
    time.sleep(0.5)
    assert proc.poll() is None
    # The next try comes within 5 s of the failed one.
    sink = Sink(socket.create_server(("127.0.0.1", port)))
    frames = sink.wait_frames(5, 8)
    err = stop(proc, 3)
    again = f"extrescue: syslog server 127.0.0.1:{port} reachable again"
    assert [parse(f)["msg"] for f in frames] == ["early 1", "early 2", down, "while away", again]
    lines = said.read_text().splitlines()
    assert lines.count(down) == 1 and lines.count(again) == 1, lines
    assert err.decode().splitlines() == [down, again]


def test_stop_is_bounded_when_the_server_never_reads_or_drops(forward, tmp_path):
    # One server accepts and never reads: the window fills.
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.bind(("127.0.0.1", 0))
    stalled.listen(1)
    said = tmp_path / "said"
    said.write_bytes(b"".join(b"%05d " % i + b"z" * 1000 + b"\n" for i in range(6000)) + b"the end\n")
    # The other's queue is full, so it drops every SYN: a connect hangs.
    dropping = socket.socket()
    dropping.bind(("127.0.0.1", 0))
    dropping.listen(0)
    filler = socket.create_connection(dropping.getsockname())
    (tmp_path / "said2").write_bytes(b"waiting\n")
    procs = [start(forward, "--tcp", f"127.0.0.1:{stalled.getsockname()[1]}", str(said)),
             start(forward, "--tcp", f"127.0.0.1:{dropping.getsockname()[1]}", str(tmp_path / "said2"))]
    stalled.settimeout(scaled(5))
    conn, _ = stalled.accept()
    time.sleep(0.7)
    started = time.monotonic()
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            _, err = proc.communicate(timeout=6)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("still running 6 s after SIGTERM")
        assert proc.returncode == 0 and time.monotonic() - started < 3.5, (time.monotonic() - started, err)
        assert b"not reachable" not in err      # stopping is no failure of the server
    # Read only now: the window was full, so the end never went.
    conn.settimeout(scaled(5))
    data = b""
    while chunk := conn.recv(1 << 20):
        data += chunk
    assert b"the end" not in data and b"00000 zzz" in data
    filler.close()


class Recorder(http.server.BaseHTTPRequestHandler):
    """Records each request; answers with the server's STATUS and BODY."""

    def do_PUT(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.requests.append((self.command, self.path, dict(self.headers), body))
        self.send_response(self.server.status)
        if self.server.status == 301:
            self.send_header("Location", "/elsewhere")
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    do_GET = do_POST = do_PUT

    def log_message(self, *args):
        pass


@pytest.fixture
def web():
    server = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    server.requests, server.status, server.body = [], 200, b""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def one_line(r):
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_put_sends_the_file_as_it_is(http_put, web, tmp_path):
    body = b"# TYPE extrescue_up gauge\nextrescue_up 1\n" + bytes(range(256))
    (tmp_path / "m").write_bytes(body)
    port = web.server_address[1]
    r = host([*http_put, f"http://127.0.0.1:{port}/metrics/job/extrescue/instance/web1", str(tmp_path / "m")])
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = host([*http_put, "--content-type", "application/json", f"http://127.0.0.1:{port}", str(tmp_path / "m")])
    assert r.returncode == 0 and r.stderr == "", r.stderr
    (method, path, headers, got), (_, path2, headers2, _) = web.requests
    assert (method, path, got) == ("PUT", "/metrics/job/extrescue/instance/web1", body)
    assert headers["Content-Type"] == "text/plain; version=0.0.4" and headers["Host"] == f"127.0.0.1:{port}"
    assert headers["Content-Length"] == str(len(body)) and headers["User-Agent"] == "extrescue"
    assert headers["Connection"] == "close"
    assert path2 == "/" and headers2["Content-Type"] == "application/json"


@pytest.mark.parametrize("status", [500, 301])
def test_put_refused_is_one_line(http_put, web, tmp_path, status):
    web.status, web.body = status, b"push failed: \x1b[2J bad\nsecond line\n"
    (tmp_path / "m").write_bytes(b"x 1\n")
    url = f"http://127.0.0.1:{web.server_address[1]}/m"
    r = host([*http_put, url, str(tmp_path / "m")])
    assert r.returncode == 1
    assert re.fullmatch(rf"http-put: {url}: HTTP {status} [ -~]+: push failed: \?\[2J bad", one_line(r)), r.stderr
    assert len(web.requests) == 1       # a redirect is not followed


def test_put_gives_up_at_its_timeout(http_put, tmp_path):
    (tmp_path / "m").write_bytes(b"x 1\n")
    silent = socket.create_server(("127.0.0.1", 0))     # accepts (its queue), never answers
    started = time.monotonic()
    r = host([*http_put, "--timeout", "2", f"http://127.0.0.1:{silent.getsockname()[1]}/m", str(tmp_path / "m")])
    took = time.monotonic() - started
    assert r.returncode == 1 and 1.9 < took < 3, (took, r.stderr)
    assert one_line(r) == f"http-put: 127.0.0.1:{silent.getsockname()[1]}: no answer within 2 s"


@pytest.mark.parametrize("url", ["https://127.0.0.1/m", "http://127.0.0.1/a b", "127.0.0.1/m", "http://u:p@127.0.0.1/",
                                 "http://[::1/m", "http://127.0.0.1:99999/m", "http://x/\x1b[2J", "http://x/" + "a" * 2100])
def test_put_refuses_what_is_no_http_url(http_put, tmp_path, url):
    (tmp_path / "m").write_bytes(b"x 1\n")
    r = host([*http_put, url, str(tmp_path / "m")])
    shown = re.sub(r"[^ -~]", "?", url)[:2048]
    assert r.returncode == 2 and one_line(r) == f"http-put: URL must be http://HOST[:PORT]/PATH: {shown}"


def test_put_refusals_of_its_own(http_put, tmp_path):
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    (tmp_path / "m").write_bytes(b"x 1\n")
    r = host([*http_put, f"http://127.0.0.1:{port}/m", str(tmp_path / "m")])
    assert r.returncode == 1 and one_line(r) == f"http-put: 127.0.0.1:{port}: Connection refused"
    (tmp_path / "big").write_bytes(b"x" * (4 * 1024 * 1024 + 1))
    r = host([*http_put, f"http://127.0.0.1:{port}/m", str(tmp_path / "big")])
    assert r.returncode == 2 and "larger than 4 MiB" in one_line(r)
