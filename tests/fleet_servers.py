"""The servers a fleet's operators already run, Debian's own, on 127.0.0.1 for
the fleet tests: a Prometheus Pushgateway, a Prometheus that scrapes it
(every second, with the netboot folder's alert rules), and an rsyslog that
listens on UDP and TCP and writes every message to one file. The guests
reach them as 10.0.2.2."""
import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request

from harness import scaled


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, ready, seconds):
    end = time.monotonic() + scaled(seconds)
    while time.monotonic() < end:
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{what} did not come up within {scaled(seconds)} s")


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


class Daemon:
    def __init__(self, name, cmd, folder):
        self.log = open(os.path.join(folder, f"{name}.log"), "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, cwd=folder)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Pushgateway(Daemon):
    def __init__(self, folder):
        self.port = free_port()
        # Debian's build persists to /var/lib/prometheus by default: memory only here.
        super().__init__("pushgateway", ["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{self.port}",
                                         "--persistence.file="],
                         folder)
        self.url = f"http://127.0.0.1:{self.port}"
        self.guest_url = f"http://10.0.2.2:{self.port}"
        wait_for("the Pushgateway", lambda: http_get(f"{self.url}/-/ready"), 30)


class Prometheus(Daemon):
    def __init__(self, folder, pushgateway, rules):
        self.port = free_port()
        config = os.path.join(folder, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    f"rule_files:\n  - {rules}\n"
                    "scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
                    f"    static_configs:\n      - targets: ['127.0.0.1:{pushgateway.port}']\n")
        super().__init__("prometheus", ["prometheus", f"--config.file={config}",
                                        f"--storage.tsdb.path={folder}/tsdb",
                                        f"--web.listen-address=127.0.0.1:{self.port}"], folder)
        self.url = f"http://127.0.0.1:{self.port}"
        wait_for("Prometheus", lambda: http_get(f"{self.url}/-/ready"), 60)

    def query(self, promql):
        """The instant vector PROMQL selects, as [(labels, value)]."""
        doc = json.loads(http_get(f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})))
        assert doc["status"] == "success", doc
        return [(r["metric"], float(r["value"][1])) for r in doc["data"]["result"]]

    def alerts(self):
        doc = json.loads(http_get(f"{self.url}/api/v1/alerts"))
        return doc["data"]["alerts"]


class Rsyslog(Daemon):
    """rsyslogd in the foreground with a configuration of its own: UDP and TCP
    on 127.0.0.1, every message as HOSTNAME, structured data and text."""

    def __init__(self, folder):
        self.udp, self.tcp = free_port(socket.SOCK_DGRAM), free_port()
        self.file = os.path.join(folder, "fleet.log")
        config = os.path.join(folder, "rsyslog.conf")
        with open(config, "w") as f:
            f.write(f'global(workDirectory="{folder}")\n'
                    'module(load="imudp")\nmodule(load="imtcp")\n'
                    f'input(type="imudp" address="127.0.0.1" port="{self.udp}")\n'
                    f'input(type="imtcp" address="127.0.0.1" port="{self.tcp}")\n'
                    'template(name="fleet" type="string" '
                    'string="%HOSTNAME%\\t%APP-NAME%\\t%STRUCTURED-DATA%\\t%msg%\\n")\n'
                    f'action(type="omfile" file="{self.file}" template="fleet")\n')
        super().__init__("rsyslog", ["rsyslogd", "-n", "-f", config, "-i", os.path.join(folder, "rsyslog.pid")],
                         folder)
        wait_for("rsyslog", lambda: socket.create_connection(("127.0.0.1", self.tcp), 1).close() or True, 30)

    def lines(self):
        """[(hostname, app, sequenceId, text)] in the file's order."""
        if not os.path.exists(self.file):
            return []
        out = []
        with open(self.file, errors="replace") as f:
            for line in f:
                host, app, sd, text = (line.rstrip("\n").split("\t", 3) + ["", "", ""])[:4]
                seq = sd.split('sequenceId="', 1)[1].split('"', 1)[0] if 'sequenceId="' in sd else "0"
                out.append((host, app, int(seq) if seq.isdigit() else 0, text))
        return out
