"""Built server disks kept between runs, outside the tree: a server takes
minutes of preparation boots to build, and the same inputs build the same
server. The assemble tests' md/LVM/LUKS member images, made in a preparation
boot of the image, are kept the same way. An entry is keyed by the sha256 of
everything that goes into it: every tracked file outside tests/ (the rescue
image's sources and pins, whose tools lay out and install the server), the
test files that build it, the Debian tarball it is unpacked from (if any),
and the host's mke2fs and QEMU. Any change to one of them builds the entry
again; an entry is written under a temporary name and renamed whole, so a
killed build leaves nothing that looks finished. Workers of a parallel run
take a lock per entry: one builds, the other waits and then uses it.

EXTRESCUE_IMAGE_CACHE=off builds every server afresh, as a first run does."""
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess

from harness import TOP

CACHE = os.path.join(os.environ.get("EXTRESCUE_CACHE") or os.path.expanduser("~/.cache/extrescue"),
                     "server-images")
# Tests that build or shape a server; the rest of tests/ does not change one.
# (harness.py only drives guests: what they are started with is qemu/run's,
# an input as every tracked file outside tests/ is.)
BUILDERS = ("tests/server.py", "tests/server_encrypted.py", "tests/server_breaks.py", "tests/disks.py",
            "tests/stacks.py", "tests/image_cache.py", "tests/server/build-fixture", "tests/server/packages")
# Tracked files that change no byte of a server: words (every *.md) and the
# benchmarks.
NOT_INPUTS = ("LICENSE",)
NOT_INPUT_FOLDERS = ("bench/",)


def _tracked():
    r = subprocess.run(["git", "-C", TOP, "ls-files", "-z"], capture_output=True)
    if r.returncode == 0:
        return sorted(p.decode() for p in r.stdout.split(b"\0") if p)
    found = []                        # a tree without git: every file but out/
    for top, dirs, files in os.walk(TOP):
        dirs[:] = [d for d in dirs if not (top == TOP and d in ("out", ".git")) and d != "__pycache__"]
        found += [os.path.relpath(os.path.join(top, f), TOP) for f in files]
    return sorted(found)


def _tool_version(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    return (r.stdout + r.stderr).splitlines()[:1]


# The Debian tarball is hashed once per process (0.7 GB; the scheduler asks
# for every server before the run, the fixtures again).
@functools.lru_cache(maxsize=None)
def _file_digest(path, ino, size, mtime_ns, ctime_ns):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").digest()


def key(name, tarball):
    """The cache key of server NAME unpacked from TARBALL (None: images made
    without one, by the image's own tools)."""
    h = hashlib.sha256(f"{name}\0".encode())
    for rel in _tracked():
        if rel in NOT_INPUTS or rel.endswith(".md") or rel.startswith(NOT_INPUT_FOLDERS) or \
                (rel.startswith("tests/") and rel not in BUILDERS):
            continue
        path = os.path.join(TOP, rel)
        if os.path.isfile(path):      # a deleted, not yet committed file is no input
            with open(path, "rb") as f:
                h.update(rel.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    if tarball:
        st = os.stat(tarball)
        h.update(_file_digest(tarball, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    for argv in (["mke2fs", "-V"], ["qemu-system-x86_64", "--version"]):
        h.update(json.dumps(_tool_version(argv)).encode())
    return h.hexdigest()[:24]


@contextlib.contextmanager
def _locked(name):
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, f"{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


PLACE = "cache-entry:"              # a path inside the entry, as layout.json records it


def _relative(layout, folder):
    def rel(v):
        if isinstance(v, str) and v.startswith(folder + os.sep):
            return PLACE + os.path.relpath(v, folder)
        return v
    return {k: [rel(d) for d in v] if isinstance(v, list) else rel(v) for k, v in layout.items()}


def _absolute(layout, folder):
    def ab(v):
        return os.path.join(folder, v[len(PLACE):]) if isinstance(v, str) and v.startswith(PLACE) else v
    return {k: [ab(d) for d in v] if isinstance(v, list) else ab(v) for k, v in layout.items()}


def ready(name, tarball):
    """Whether server NAME unpacked from TARBALL is in the cache."""
    return os.environ.get("EXTRESCUE_IMAGE_CACHE") != "off" and \
        os.path.exists(os.path.join(CACHE, f"{name}-{key(name, tarball)}", "layout.json"))


def cached(name, tarball, build, scratch):
    """(layout, data, built now?) of entry NAME, the first two as
    BUILD(folder) returned them (data: what it keeps beside the layout, such
    as {path: sha256}): from the cache, or BUILD run in a new entry (SCRATCH(),
    a folder of the run, when the cache is off). The entry's images are the
    base a scenario copies, never booted themselves."""
    if os.environ.get("EXTRESCUE_IMAGE_CACHE") == "off":
        layout, sums = build(scratch())
        return layout, sums, True
    entry = os.path.join(CACHE, f"{name}-{key(name, tarball)}")
    with _locked(name):
        if not os.path.exists(os.path.join(entry, "layout.json")):
            tmp = f"{entry}.part"
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            try:
                layout, sums = build(tmp)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)     # its guests' logs stay in out/<arch>/test-logs
                raise
            with open(os.path.join(tmp, "layout.json"), "w") as f:
                json.dump({"layout": _relative(layout, tmp), "sums": sums}, f)
            shutil.rmtree(entry, ignore_errors=True)       # an entry left without its layout.json
            os.rename(tmp, entry)
            # Other keys of this server are stale: each holds gigabytes.
            for old in os.listdir(CACHE):
                if re.fullmatch(re.escape(name) + r"-[0-9a-f]{24}(\.part)?", old) and \
                        os.path.join(CACHE, old) != entry:
                    shutil.rmtree(os.path.join(CACHE, old), ignore_errors=True)
            built = True
        else:
            built = False
    with open(os.path.join(entry, "layout.json")) as f:
        saved = json.load(f)
    return _absolute(saved["layout"], entry), saved["sums"], built
