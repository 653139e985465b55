"""scripts/fleet-page: the fleet's reports (README.md, "The report") as one
HTML page. Realistic and hostile reports in a folder, the page read back
with html.parser: a row per machine with its newest report's verdict, worst
first, links to its older reports, every string from a machine escaped, links
to the files. No QEMU; a second or so."""
import copy
import html.parser
import json
import os
import subprocess
import urllib.parse

import pytest

FLEET_PAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "fleet-page")
HOSTILE = '<script>alert(1)</script>"&\x01\x1b[2J'


def report(serial, mac, fsck=(), extscan=None, disks=None, errors=(), machine_id=None):
    """A schema 1 report as rescue-report writes it after rescue.fsck=check."""
    doc = {
        "schema": 1, "extrescue": "1.4-2", "kernel": "6.12.9-extrescue", "architecture": "x86_64",
        "uptime_seconds": 73,
        "machine": {"vendor": "Dell Inc.", "product": "PowerEdge R640", "serial": serial, "hostname": "extrescue",
                    "interfaces": [{"name": "eth0", "mac": mac, "addresses": ["10.0.8.21/24"]}]},
        "cmdline": "ip=dhcp rescue.fsck=check rescue.report=http://10.0.8.5:8000/ rescue.after=poweroff",
        "disks": disks if disks is not None else [
            {"name": "sda", "size_bytes": 480103981056, "model": "SSDSC2KB480G8R", "partition": False,
             "read_only": False, "health": "passed", "reallocated_sectors": 0, "pending_sectors": 0,
             "media_errors": None, "io_errors": 0},
            {"name": "sda1", "size_bytes": 536870912, "model": "", "partition": True, "read_only": False},
            {"name": "sda2", "size_bytes": 479565996032, "model": "", "partition": True, "read_only": False}],
        "assembled": [],
        "extscan": extscan if extscan is not None else [volume("/dev/sda1", "boot"), volume("/dev/sda2", "root")],
        "fsck": list(fsck), "ssh_host_keys": [], "errors": list(errors),
        "messages": ["extrescue 1.4-2", "rescue-fsck: /dev/sda2: clean"],
    }
    if machine_id is not None:
        doc["machine"]["id"] = machine_id
    return doc


def volume(device, label, state="clean"):
    return {"device": device, "size_bytes": 536870912, "label": label,
            "uuid": "0b5e7a3c-5d0e-4f43-9a51-2f8c1c0d2e11", "kind": "ext4", "state": state,
            "backup_superblock": 0, "kernel_mount": "rw", "kernel_blocker": "", "kernel_needs_newer": False,
            "e2fsck": "yes", "e2fsck_blocker": "", "same_uuid_as": "", "mounted_rw": "", "journal_device": "",
            "last_mounted_on": "/", "last_mount_time": 1717000000, "mount_count": 12, "max_mount_count": -1,
            "last_check_time": 1710000000, "features": "has_journal extent 64bit"}


def checked(device, status, meaning, seconds=4):
    return {"mode": "check", "device": device, "status": status, "meaning": meaning, "seconds": seconds,
            "undo_file": None, "undo_command": None}


def fleet():
    """File name → report: the fleet of the tests."""
    clean = report("CN7475", "52:54:00:00:00:01", machine_id="CN7475",
                   fsck=[checked("/dev/sda1", 0, "clean"), checked("/dev/sda2", 0, "clean", 31)])
    damaged = report("CN7476", "52:54:00:00:00:02", machine_id="CN7476",
                     fsck=[checked("/dev/sda1", 0, "clean"),
                           checked("/dev/sda2", 4, "errors found (not fixed: read-only check)")])
    corrected_failing = report("CN7477", "52:54:00:00:00:03", machine_id="CN7477",
                               fsck=[checked("/dev/sda2", 1, "errors corrected"),
                                     checked("/dev/sdb1", None, "skipped: mounted at /mnt")],
                               errors=["ip=1.2.3.4 has no valid netmask"])
    corrected_failing["disks"][0].update(pending_sectors=8, io_errors=3)
    # An older report: no machine.id, no SMART fields, no rescue.fsck=.
    scanned = report(None, "52:54:00:00:00:04", extscan=[volume("/dev/vda1", "data", "not clean, errors recorded")],
                     disks=[{"name": "vda", "size_bytes": 1 << 30, "model": "", "partition": False,
                             "read_only": False}])
    hostile = report(HOSTILE, "52:54:00:00:00:05", machine_id=HOSTILE,
                     fsck=[checked("/dev/" + HOSTILE, 0, HOSTILE)], errors=[HOSTILE, "\x07bell"])
    hostile["machine"].update(vendor=HOSTILE, product="<img src=x onerror=alert(1)>")
    hostile["disks"][0].update(model=HOSTILE, name=HOSTILE, health="failed")
    hostile["extscan"][0]["label"] = HOSTILE
    return {"report-CN7475.json": clean, "report-CN7476.json": damaged, "report-CN7477.json": corrected_failing,
            "report-52_54_00_00_00_04.json": scanned, "report-" + HOSTILE.replace("/", "_") + ".json": hostile}


class Page(html.parser.HTMLParser):
    """The rows, the summary and whether tr/td open and close in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows, self.summary, self.open, self.unbalanced = [], None, [], []
        self.text_of = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("table", "tr", "td", "th"):
            self.open.append(tag)
        if tag == "tr" and "machine" in (attrs.get("class") or "").split():
            self.rows.append({"attrs": attrs, "text": "", "verdicts": [], "links": []})
        row = self.rows[-1] if self.rows and "tr" in self.open else None
        if row is not None and tag == "span" and "verdict" in attrs.get("class", "").split():
            row["verdicts"].append(attrs["class"].split())
        if row is not None and tag == "a":
            row["links"].append(attrs["href"])
        if tag == "p" and "summary" in (attrs.get("class") or ""):
            self.summary = attrs

    def handle_endtag(self, tag):
        if tag in ("table", "tr", "td", "th"):
            if not self.open or self.open.pop() != tag:
                self.unbalanced.append(tag)

    def handle_data(self, data):
        if self.rows and "tr" in self.open:
            self.rows[-1]["text"] += data


def run(folder):
    return subprocess.run([FLEET_PAGE, str(folder)], capture_output=True, timeout=60)


def write_fleet(folder, reports):
    for name, doc in reports.items():
        (folder / name).write_text(json.dumps(doc, indent=1))


def read_page(folder):
    r = run(folder)
    assert r.returncode == 0 and not r.stderr, r.stderr
    page = Page()
    page.feed(r.stdout.decode("utf-8"))
    page.close()
    return r.stdout.decode("utf-8"), page


def machine_row(page, words):
    found = [row for row in page.rows if words in row["text"]]
    assert len(found) == 1, [row["text"] for row in page.rows]
    return found[0]


def test_a_row_per_machine_with_its_verdicts(tmp_path):
    write_fleet(tmp_path, fleet())
    (tmp_path / "notes.txt").write_text("not a report")
    (tmp_path / "report-broken.json").write_text('{"schema": 1, "machine": {')
    _, page = read_page(tmp_path)
    assert len(page.rows) == 6 and not page.unbalanced and not page.open
    want = {"CN7475": "clean", "CN7476": "errors-left", "CN7477": "disk-trouble", "52:54:00:00:00:04": "unclean",
            "alert(1)": "disk-trouble", "report-broken.json": "unreadable"}
    for name, verdict in want.items():
        row = machine_row(page, name)
        assert row["attrs"]["data-verdict"] == verdict, (name, row)
    cn7475 = machine_row(page, "CN7475")["text"]
    volumes = {name: [v[1:3] for v in machine_row(page, name)["verdicts"]] for name in want}
    assert volumes["CN7475"] == [["clean", "green"]] * 2 and cn7475.startswith("CN7475clean")
    assert "/dev/sda1: clean (4 s)" in cn7475 and "/dev/sda2: clean (31 s)none" in cn7475
    assert volumes["CN7476"] == [["clean", "green"], ["errors-left", "red"]]
    assert volumes["CN7477"] == [["corrected", "amber"], ["skipped", "grey"], ["disk-trouble", "red"]]
    assert volumes["52:54:00:00:00:04"] == [["unclean", "amber"]]
    cn7477 = machine_row(page, "CN7477")["text"]
    assert cn7477.startswith("CN7477disk troubleDell Inc. PowerEdge R640")
    assert "/dev/sda2: corrected (4 s)" in cn7477 and "sda: 8 pending, 3 I/O errors" in cn7477
    assert "errors left" in machine_row(page, "CN7476")["text"]
    assert "unreadable report: not valid JSON" in machine_row(page, "report-broken.json")["text"]
    assert page.summary["data-machines"] == "6" and page.summary["data-attention"] == "4"


def test_worst_first_then_by_name(tmp_path):
    write_fleet(tmp_path, fleet())
    _, page = read_page(tmp_path)
    order = [row["attrs"]["data-verdict"] for row in page.rows]
    assert order == ["errors-left", "disk-trouble", "disk-trouble", "unclean", "clean"]
    names = [row["text"] for row in page.rows[1:3]]
    assert names[0].startswith("<script>") and names[1].startswith("CN7477"), names  # "<" sorts before "C"


def test_hostile_strings_are_escaped(tmp_path):
    reports = fleet()
    write_fleet(tmp_path, reports)
    (tmp_path / os.fsdecode(b"\xff<b>.json")).write_text(json.dumps(reports["report-CN7475.json"]))
    out, page = read_page(tmp_path)
    assert "<script" not in out.lower() and "<img" not in out and "<b>.json" not in out
    assert not any(ord(c) < 0x20 and c not in "\n" for c in out)
    row = machine_row(page, "alert(1)")
    # The parser gives the text back as the machine sent it, control bytes shown as \xNN.
    shown = HOSTILE.replace("\x01", "\\x01").replace("\x1b", "\\x1b")
    assert row["text"].startswith(shown + "disk trouble" + shown + " <img src=x onerror=alert(1)>"), row["text"]
    assert "\\x07bell" in row["text"] and f"/dev/{shown}: clean" in row["text"]
    assert f"{shown}: health failed" in row["text"]
    hrefs = [urllib.parse.unquote_to_bytes(link) for r in page.rows for link in r["links"]]
    assert b"\xff<b>.json" in hrefs and ("report-" + HOSTILE.replace("/", "_") + ".json").encode() in hrefs


def test_links_point_at_the_files(tmp_path):
    reports = fleet()
    write_fleet(tmp_path, reports)
    _, page = read_page(tmp_path)
    hrefs = sorted(urllib.parse.unquote(link) for row in page.rows for link in row["links"])
    assert hrefs == sorted(reports)
    assert all(not urllib.parse.urlsplit(link).scheme and "/" not in link for r in page.rows for link in r["links"])


def test_unreadable_reports_get_a_row_each(tmp_path):
    good = report("S1", "52:54:00:00:00:09", fsck=[checked("/dev/sda2", 0, "clean")])
    wrong_shape = {"list.json": [good], "schema2.json": dict(good, schema=2), "true.json": dict(good, schema=True),
                   "nomachine.json": dict(good, machine=None), "fsckstring.json": dict(good, fsck="clean"),
                   "entry.json": dict(good, disks=[1, 2]),
                   "noerrors.json": {k: v for k, v in good.items() if k != "errors"}}
    write_fleet(tmp_path, wrong_shape)
    (tmp_path / "deep.json").write_text("[" * 100000 + "]" * 100000)
    (tmp_path / "big.json").write_text(json.dumps(dict(good, messages=["x" * 1000] * 5000)))
    (tmp_path / "digits.json").write_text('{"schema": 1, "x": ' + "9" * 5000 + "}")
    os.mkfifo(tmp_path / "fifo.json")  # would hang a plain open()
    os.mkdir(tmp_path / "folder.json")
    _, page = read_page(tmp_path)
    assert len(page.rows) == len(wrong_shape) + 5
    for row in page.rows:
        assert row["attrs"]["data-verdict"] == "unreadable" and "unreadable report: " in row["text"], row
    assert "bigger than 4 MiB" in machine_row(page, "big.json")["text"]
    assert "schema 2" in machine_row(page, "schema2.json")["text"]
    assert "not a regular file" in machine_row(page, "fifo.json")["text"]


def test_numbers_that_are_not_numbers_are_ignored(tmp_path):
    doc = report("S2", "52:54:00:00:00:0a", fsck=[checked("/dev/sda2", 0, "clean", seconds="long")])
    doc["disks"][0].update(pending_sectors="8", reallocated_sectors=True, media_errors=[3], io_errors=None)
    text = json.dumps(doc).replace('"uptime_seconds": 73', '"uptime_seconds": NaN, "y": Infinity')
    (tmp_path / "odd.json").write_text(text)
    strange = copy.deepcopy(doc)
    strange["machine"]["serial"] = "S3"  # another machine, so a row of its own
    strange["fsck"][0]["status"] = "0"
    strange["disks"][0]["io_errors"] = 10 ** 500
    (tmp_path / "strange.json").write_text(json.dumps(strange))
    _, page = read_page(tmp_path)
    assert machine_row(page, "odd.json")["attrs"]["data-verdict"] == "clean"
    assert machine_row(page, "strange.json")["attrs"]["data-verdict"] == "check-failed"


def test_machine_names_fall_back_to_serial_mac_then_file(tmp_path):
    by_id = report("SER1", "52:54:00:00:00:0b", machine_id="rack4-u12")
    by_serial = report("SER2", "52:54:00:00:00:0c")
    by_mac = report(None, "52:54:00:00:00:0d")
    by_file = report(None, "52:54:00:00:00:0e")
    by_file["machine"]["interfaces"] = []
    write_fleet(tmp_path, {"a.json": by_id, "b.json": by_serial, "c.json": by_mac, "d.json": by_file})
    _, page = read_page(tmp_path)
    names = sorted(row["text"].split("clean")[0] for row in page.rows)
    assert names == ["52:54:00:00:00:0d", "SER2", "d.json", "rack4-u12"]


def test_an_empty_folder_is_a_page_of_no_machines(tmp_path):
    out, page = read_page(tmp_path)
    assert page.rows == [] and page.summary["data-machines"] == "0" and '<meta name="viewport"' in out
    assert "<script" not in out and "@media (max-width:639px)" in out


def test_strings_and_lists_are_bounded(tmp_path):
    doc = report("X" * 100000, "52:54:00:00:00:0f", errors=["e" * 1000] * 1000,
                 fsck=[checked(f"/dev/sd{i}", 0, "clean") for i in range(5000)])
    write_fleet(tmp_path, {"huge.json": doc})
    out, page = read_page(tmp_path)
    row = page.rows[0]
    assert row["text"].startswith("X" * 200 + "…clean") and "X" * 201 not in out
    assert len(row["verdicts"]) == 50 and "and 4950 more" in row["text"] and "e" * 201 not in out
    assert len(out) < 100000


def write_at(folder, name, doc, mtime):
    """A report file as the collector kept it at that time (seconds since 1970)."""
    path = folder / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    os.utime(path, (mtime, mtime))


def test_a_machine_shows_its_newest_report_and_links_the_older(tmp_path):
    errors_left = report("CN1", "52:54:00:00:01:01", machine_id="CN1",
                         fsck=[checked("/dev/sda2", 4, "errors found (not fixed: read-only check)")])
    corrected = report("CN1", "52:54:00:00:01:01", machine_id="CN1", fsck=[checked("/dev/sda2", 1, "corrected")])
    clean = report("CN1", "52:54:00:00:01:01", machine_id="CN1", fsck=[checked("/dev/sda2", 0, "clean")])
    # The mtime decides, not the name: the oldest report has the latest name.
    write_at(tmp_path, "20250301-0900-c.json", errors_left, 1740000000)
    write_at(tmp_path, "20250101-0900-a.json", corrected, 1740000100)
    write_at(tmp_path, "20250201-0900-b.json", clean, 1740000200)
    _, page = read_page(tmp_path)
    assert len(page.rows) == 1 and not page.unbalanced and page.summary["data-machines"] == "1"
    row = page.rows[0]
    assert row["attrs"]["data-verdict"] == "clean" and row["attrs"]["data-colour"] == "green"
    assert [v[1] for v in row["verdicts"]] == ["clean"] and "errors left" not in row["text"]
    assert "2025-02-19 21:23:20Z" in row["text"] and "2 older reports: " in row["text"]
    assert row["links"] == ["20250201-0900-b.json", "20250101-0900-a.json", "20250301-0900-c.json"]
    assert page.summary["data-attention"] == "0"


def test_same_mtime_the_later_name_wins(tmp_path):
    clean = report("CN2", "52:54:00:00:01:02", fsck=[checked("/dev/sda2", 0, "clean")])
    errors_left = report("CN2", "52:54:00:00:01:02", fsck=[checked("/dev/sda2", 4, "errors left")])
    write_at(tmp_path, "20250101-0900-x.json", clean, 1740000000)
    write_at(tmp_path, "20250101-0901-x.json", errors_left, 1740000000)
    _, page = read_page(tmp_path)
    row = machine_row(page, "CN2")
    assert len(page.rows) == 1 and row["attrs"]["data-verdict"] == "errors-left"
    assert row["links"] == ["20250101-0901-x.json", "20250101-0900-x.json"] and "1 older report: " in row["text"]


def test_two_machines_are_two_rows(tmp_path):
    for i in range(3):
        write_at(tmp_path, f"2025010{i}-0900-one.json",
                 report("ONE", "52:54:00:00:01:03", fsck=[checked("/dev/sda2", 0, "clean")]), 1740000000 + i)
    write_at(tmp_path, "20250101-0900-two.json",
             report("TWO", "52:54:00:00:01:04", fsck=[checked("/dev/sda2", 4, "errors left")]), 1740000000)
    _, page = read_page(tmp_path)
    assert [r["attrs"]["data-verdict"] for r in page.rows] == ["errors-left", "clean"]
    assert page.summary["data-machines"] == "2" and page.summary["data-attention"] == "1"
    assert len(machine_row(page, "TWO")["links"]) == 1 and "older" not in machine_row(page, "TWO")["text"]
    assert len(machine_row(page, "ONE")["links"]) == 3 and "2 older reports" in machine_row(page, "ONE")["text"]


def test_an_unreadable_report_stays_its_own_row(tmp_path):
    # A machine whose id is the unreadable file's name is still another row.
    named = report("CN3", "52:54:00:00:01:05", machine_id="broken.json", fsck=[checked("/dev/sda2", 0, "clean")])
    write_at(tmp_path, "a.json", named, 1740000000)
    write_at(tmp_path, "b.json", named, 1740000100)
    write_at(tmp_path, "broken.json", '{"schema": 1, "machine": {', 1740000200)
    write_at(tmp_path, "broken2.json", "[]", 1740000300)
    _, page = read_page(tmp_path)
    assert [r["attrs"]["data-verdict"] for r in page.rows] == ["unreadable", "unreadable", "clean"]
    assert [r["links"] for r in page.rows] == [["broken.json"], ["broken2.json"], ["b.json", "a.json"]]
    assert "older" not in page.rows[0]["text"] + page.rows[1]["text"]


def test_older_links_are_bounded(tmp_path):
    for i in range(25):
        write_at(tmp_path, f"r{i:02d}.json", report("CN4", "52:54:00:00:01:06"), 1740000000 + i)
    out, page = read_page(tmp_path)
    row = page.rows[0]
    assert len(page.rows) == 1 and "24 older reports: " in row["text"] and row["text"].endswith(" and 14 more")
    assert row["links"] == [f"r{i:02d}.json" for i in range(24, 13, -1)]


@pytest.mark.parametrize("args", [["/nonexistent/reports"], [__file__], []])
def test_usage_error(args):
    r = subprocess.run([FLEET_PAGE, *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fleet-page: ") and ": not a folder; usage: " in lines[0]


def test_is_an_executable_for_the_system_python():
    with open(FLEET_PAGE) as f:
        assert f.readline() == "#!/usr/bin/python3\n"
    assert os.access(FLEET_PAGE, os.X_OK)
