"""The built-server cache (tests/image_cache.py) is never silently stale:
any input changes the key, what is no input does not, a missing or
half-written entry is built again, and two users of one entry share it."""
import os
import subprocess
import threading

import image_cache


def repo(tmp_path):
    top = tmp_path / "top"
    for rel, text in (("src/extscan/extscan.c", "int main(void) { return 0; }\n"), ("README.md", "# x\n"),
                      ("tests/server.py", "# builds the server\n"), ("tests/test_other.py", "# a test\n")):
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(top)], check=True)
    subprocess.run(["git", "-C", str(top), "add", "."], check=True)
    return top


def test_key_follows_every_input_and_nothing_else(tmp_path, monkeypatch):
    top = repo(tmp_path)
    monkeypatch.setattr(image_cache, "TOP", str(top))
    tarball = tmp_path / "debian.tar"
    tarball.write_bytes(b"tree one")
    base = image_cache.key("bios", str(tarball))
    assert image_cache.key("uefi", str(tarball)) != base
    (top / "README.md").write_text("# words only\n")
    (top / "tests/test_other.py").write_text("# another test\n")
    assert image_cache.key("bios", str(tarball)) == base, "a file that builds nothing changed the key"
    for rel in ("src/extscan/extscan.c", "tests/server.py"):
        before = (top / rel).read_text()
        (top / rel).write_text(before + "// changed\n")
        assert image_cache.key("bios", str(tarball)) != base, f"{rel} changed and the key did not"
        (top / rel).write_text(before)
    assert image_cache.key("bios", str(tarball)) == base
    tarball.write_bytes(b"tree two")
    assert image_cache.key("bios", str(tarball)) != base, "a new Debian tree kept the old servers"


def test_entries_built_once_shared_and_never_half(tmp_path, monkeypatch):
    top = repo(tmp_path)
    monkeypatch.setattr(image_cache, "TOP", str(top))
    monkeypatch.setattr(image_cache, "CACHE", str(tmp_path / "cache"))
    tarball = tmp_path / "debian.tar"
    tarball.write_bytes(b"tree")
    builds = []

    def build(folder):
        builds.append(folder)
        disk = os.path.join(folder, "root.img")
        with open(disk, "w") as f:
            f.write("disk")
        return {"disks": [disk], "root": disk, "firmware": "bios", "rootdev": "/dev/vda1"}, {"/f": "00"}

    got = []
    threads = [threading.Thread(target=lambda: got.append(image_cache.cached("bios", str(tarball), build, None)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and [g[2] for g in sorted(got, key=lambda g: not g[2])] == [True, False]
    layout, sums, _ = got[0]
    assert layout["rootdev"] == "/dev/vda1" and sums == {"/f": "00"}
    assert open(layout["root"]).read() == "disk" and layout["disks"] == [layout["root"]]
    # A build that fails leaves nothing that looks finished; the next one builds.
    (top / "src/extscan/extscan.c").write_text("changed\n")

    def broken(folder):
        raise RuntimeError("guest died")
    try:
        image_cache.cached("bios", str(tarball), broken, None)
    except RuntimeError:
        pass
    assert [e for e in os.listdir(tmp_path / "cache") if not e.endswith(".lock")] == \
        [os.path.basename(os.path.dirname(layout["root"]))], "a failed build left an entry"
    image_cache.cached("bios", str(tarball), build, None)
    assert len(builds) == 2
    entries = [e for e in os.listdir(tmp_path / "cache") if not e.endswith(".lock")]
    assert len(entries) == 1, f"the stale entry stayed beside the new one: {entries}"
