"""Checks of the build system itself: config check, download cache, messages."""
import glob
import hashlib
import os
import shutil
import subprocess

import pytest

from harness import ARM64_OUT, OUT, PIN_LIST, TOP, host, lock_lines

LINUX_SRC = os.path.join(OUT, "build", "linux-src")


def make(*args, **kw):
    return host(["make", "--no-print-directory", "-C", TOP] + list(args), **kw)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def pin(name):
    for fields in lock_lines():
        if fields[0] == name:
            return fields


@pytest.mark.skipif(not os.path.isdir(LINUX_SRC), reason="needs the extracted kernel (run make)")
def test_config_check_fails_on_dropped_option(tmp_path):
    # SND_HDA_INTEL depends on SOUND and SND, which no fragment enables.
    bad = tmp_path / "zz-dropped.config"
    bad.write_text("CONFIG_BLK_DEV_LOOP=y\nCONFIG_SND_HDA_INTEL=y\n")
    obj = tmp_path / "obj"
    frags = " ".join(sorted(glob.glob(os.path.join(TOP, "package/linux/config/*.config")))
                     + sorted(glob.glob(os.path.join(TOP, "package/linux/config/x86_64/*.config"))) + [str(bad)])
    # Stamps of its own (a copy, dates kept): the recipe stamp that names the
    # fragments must not change under the project's own build.
    stamps = tmp_path / "stamps"
    shutil.copytree(os.path.join(OUT, "stamps"), stamps, ignore=shutil.ignore_patterns("*.pending"))
    r = make(f"STAMPS={stamps}", f"LINUX_OBJ={obj}", f"LINUX_FRAGMENTS={frags}", f"{obj}/.config")
    assert r.returncode != 0
    assert "CONFIG_SND_HDA_INTEL=y" in r.stderr and "zz-dropped.config" in r.stderr, r.stderr
    assert "CONFIG_BLK_DEV_LOOP" not in r.stderr, "a kept option was reported as dropped"
    assert not (obj / ".config").exists(), "a rejected config was left in place"


def test_arm64_kernel_config_keeps_every_requested_option():
    """The shared fragments and arm64's own merge on arm64 with every
    requested option present (an option only x86_64 has, put in a shared
    fragment, stops this make with its name)."""
    r = host(["make", "--no-print-directory", "-C", TOP, "EXTRESCUE_ARCH=arm64", f"OUT={ARM64_OUT}", "linux-config"])
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    with open(os.path.join(ARM64_OUT, "build", "linux", ".config")) as f:
        config = f.read().splitlines()
    for option in ("CONFIG_ARM64=y", "CONFIG_SERIAL_AMBA_PL011_CONSOLE=y", "CONFIG_SERIAL_8250_CONSOLE=y",
                   "CONFIG_EXT4_FS=y", "CONFIG_SCSI_HISI_SAS_PCI=y", "CONFIG_SCSI_MPT3SAS=y", "CONFIG_EFI_STUB=y"):
        assert option in config, f"{option} missing from the arm64 kernel's .config"


def test_corrupt_cache_file_is_detected_and_replaced(tmp_path):
    name, _, _, _, _, file, want = pin("busybox")[:7]
    dl = tmp_path / "dl"
    dl.mkdir()
    cached = os.path.join(os.environ.get("DL_DIR", os.path.expanduser("~/.cache/extrescue/dl")), file)
    if os.path.exists(cached):
        shutil.copy(cached, dl / file)
    else:
        (dl / file).write_bytes(b"\0" * 4096)
    with open(dl / file, "r+b") as f:
        f.seek(1000)
        f.write(b"\xff\xfe\xfd")
    bad_sum = sha256(dl / file)
    env = dict(os.environ, DL_DIR=str(dl), LOCK=PIN_LIST)
    r = host([os.path.join(TOP, "scripts/fetch"), name], cwd=TOP, env=env)
    assert f"expected sha256 {want}" in r.stderr and f"got {bad_sum}" in r.stderr, r.stderr
    assert r.returncode == 0, r.stderr
    assert sha256(dl / file) == want, "the corrupt file was used"
    assert sha256(dl / (file + ".bad")) == bad_sum


def test_download_with_wrong_hash_is_not_used(tmp_path):
    fields = pin("busybox")
    lock = tmp_path / "sources.lock"
    fields[6] = "0" * 64
    lock.write_text(" ".join(fields) + "\n")
    dl = tmp_path / "dl"
    env = dict(os.environ, DL_DIR=str(dl), LOCK=str(lock))
    r = host([os.path.join(TOP, "scripts/fetch"), "busybox"], cwd=TOP, env=env)
    assert r.returncode != 0
    assert "not used" in r.stderr and "0" * 64 in r.stderr, r.stderr
    assert not (dl / fields[5]).exists()


def test_pin_not_served_names_update_pins(tmp_path):
    fields = pin("busybox")
    fields[4] = "1:1.37.0-999"
    lock = tmp_path / "sources.lock"
    lock.write_text(" ".join(fields) + "\n")
    env = dict(os.environ, DL_DIR=str(tmp_path / "dl"), LOCK=str(lock))
    r = host([os.path.join(TOP, "scripts/fetch"), "busybox"], cwd=TOP, env=env)
    assert r.returncode != 0
    assert "make update-pins" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_unknown_target_one_line():
    r = make("no-such-target")
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown target 'no-such-target'" in lines[0], r.stderr


def test_help_lists_targets():
    r = make("help")
    assert r.returncode == 0
    for t in ("all", "test", "run", "bench", "repro-check", "update-pins", "linux-menuconfig",
              "busybox-menuconfig", "clean", "distclean"):
        assert f"  {t} " in r.stdout, f"'{t}' missing from make help"


def test_modified_tree_builds_as_dirty(tmp_path):
    clone = str(tmp_path / "clone")
    assert host(["git", "clone", "-q", TOP, clone]).returncode == 0
    clean = host(["make", "--no-print-directory", "-C", clone, "version"]).stdout.strip()
    assert clean and "dirty" not in clean
    with open(os.path.join(clone, "README.md"), "a") as f:
        f.write("a local change\n")
    assert host(["make", "--no-print-directory", "-C", clone, "version"]).stdout.strip() == clean + "-dirty"


def test_missing_package_as_non_root_prints_command():
    import tempfile
    # The script and the list copied under /tmp directly: the unprivileged
    # user may not enter the clone's folder (a clone under /root is mode 700).
    folder = tempfile.mkdtemp(prefix="extrescue-host-deps-", dir="/tmp")
    os.chmod(folder, 0o755)
    script, lst = os.path.join(folder, "host-deps"), os.path.join(folder, "packages")
    shutil.copy(os.path.join(TOP, "scripts/host-deps"), script)
    os.chmod(script, 0o755)
    with open(lst, "w") as f:
        f.write("# test list\ncoreutils\nno-such-package-extrescue\n")
    os.chmod(lst, 0o644)
    try:
        r = host(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", script, lst], cwd="/")
    finally:
        shutil.rmtree(folder)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "apt-get install -y --no-install-recommends no-such-package-extrescue" in lines[0]
    assert "coreutils" not in lines[0]


def test_runner_refuses_missing_inputs(tmp_path):
    r = host([os.path.join(TOP, "qemu/run"), "--iso", str(tmp_path / "none.iso")])
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "does not exist" in r.stderr
    r = host([os.path.join(TOP, "qemu/run"), "--dry-run", "--iso", "/dev/null",
              "--disk", "/dev/null,if=floppy"])
    assert r.returncode != 0 and "unknown controller 'floppy'" in r.stderr


def test_patch_that_does_not_apply_is_named(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.c").write_text("one\ntwo\nthree\n")
    pdir = tmp_path / "patches"
    pdir.mkdir()
    (pdir / "0001-good.patch").write_text(
        "--- a/a.c\n+++ b/a.c\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n")
    (pdir / "0002-stale.patch").write_text(
        "--- a/a.c\n+++ b/a.c\n@@ -1,3 +1,3 @@\n uno\n-dos\n+DOS\n tres\n")
    (pdir / "series").write_text("0001-good.patch\n0002-stale.patch\n")
    r = host([os.path.join(TOP, "scripts/apply-patches"), str(src), str(pdir / "series")])
    assert r.returncode != 0 and "0002-stale.patch does not apply" in r.stderr, r.stderr
    assert (src / "a.c").read_text() == "one\nTWO\nthree\n"
    # After fixing the series, a rerun reverses what was applied and starts over.
    (pdir / "series").write_text("0001-good.patch\n")
    r = host([os.path.join(TOP, "scripts/apply-patches"), str(src), str(pdir / "series")])
    assert r.returncode == 0, r.stderr
    assert (src / "a.c").read_text() == "one\nTWO\nthree\n"


def test_distclean_keeps_the_secure_boot_key(tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "out"
    for d in ("dl", "ccache", "secureboot", "server-images/x"):
        (cache / d).mkdir(parents=True)
    (cache / "dl/linux.tar.xz").write_text("a download")
    (cache / "secureboot/extrescue-sb.key").write_text("the key")
    (out / "build").mkdir(parents=True)
    r = make(f"OUT={out}", f"EXTRESCUE_CACHE={cache}", "distclean")
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(cache)) == ["secureboot"] and not out.exists()
    assert (cache / "secureboot/extrescue-sb.key").read_text() == "the key"
    assert f"distclean: kept the Secure Boot key in {cache}/secureboot" in r.stdout, r.stdout
    # Removing it asks; without a terminal and without YES=1 it stays.
    r = make(f"OUT={out}", f"EXTRESCUE_CACHE={cache}", "forget-secureboot-key", stdin=subprocess.DEVNULL)
    assert r.returncode != 0 and "YES=1" in r.stderr and (cache / "secureboot").is_dir()
    r = make(f"OUT={out}", f"EXTRESCUE_CACHE={cache}", "forget-secureboot-key", "YES=1")
    assert r.returncode == 0 and not (cache / "secureboot").exists(), r.stderr


def test_a_machine_without_a_key_makes_one_under_j(tmp_path):
    # The first make -j3 on a fresh machine stopped: the certificate was a
    # prerequisite that only sb-key's recipe makes, looked for before it ran.
    cache, out = tmp_path / "cache", tmp_path / "out"
    r = make("-j3", f"OUT={out}", f"EXTRESCUE_CACHE={cache}", "secureboot-key")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (cache / "secureboot/extrescue-sb.crt").is_file() and (out / "extrescue-mok.cer").is_file()


def test_check_updates_names_every_pin_and_its_suite():
    r = make("check-updates")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("NAME ") and "PINNED" in line)
    rows = {line.split()[0]: line for line in lines[start + 1:]}
    for fields in lock_lines():
        name, ver, suite = fields[0], fields[4], fields[10]
        row = rows.get(name, "")
        assert row.split()[1:3] == [ver, f"({suite})"], row or f"{name}: no line"
        # What the pin's own suite lists is the pin itself or newer, never older.
        if suite == "trixie":
            stable = row.split()[3]
            assert stable == "=" or subprocess.run(["dpkg", "--compare-versions", stable, "gt", ver]).returncode == 0, row
    assert not set(rows) - {f[0] for f in lock_lines()}, r.stdout


def test_a_tree_git_cannot_name_does_not_build(tmp_path):
    """No build under a made-up version: a tree without .git (or one git
    refuses to read) stops with one line saying what to do; a source archive
    names itself in .tarball-version."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for f in ("Makefile", "mk", "arch", "configs", "scripts", "package"):
        src = os.path.join(TOP, f)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, tree / f)
    r = host(["make", "--no-print-directory", "-C", str(tree), f"OUT={tmp_path}/out", "all"])
    said = [line for line in r.stderr.splitlines() if "extrescue:" in line]
    assert r.returncode != 0 and len(said) == 1 and "git cannot name the commit" in said[0] \
        and "safe.directory" in said[0], r.stderr
    assert not (tmp_path / "out").exists(), "the refused build wrote into OUT"
    (tree / ".tarball-version").write_text("0123456789ab 1700000000\n")
    r = host(["make", "--no-print-directory", "-C", str(tree), f"OUT={tmp_path}/out", "version"])
    assert r.returncode == 0 and r.stdout.strip() == "0123456789ab", r.stderr
    # A clean or help never needs a name.
    (tree / ".tarball-version").unlink()
    for goal in ("clean", "help"):
        r = host(["make", "-C", str(tree), f"OUT={tmp_path}/out", goal])
        assert r.returncode == 0, f"make {goal}: {r.stderr}"


def test_a_folder_with_a_space_is_refused_before_any_rm(tmp_path):
    spaced = tmp_path / "a b"
    (spaced / "out").mkdir(parents=True)
    keep = tmp_path / "a"
    keep.mkdir()
    r = make(f"OUT={spaced}/out", "clean")
    assert r.returncode != 0 and f'OUT "{spaced}/out" has a space in it' in r.stderr, r.stderr
    assert keep.is_dir() and (spaced / "out").is_dir()


def test_mirror_from_a_mirror_file_uri(tmp_path):
    """Debian's cloud images name their mirrors in a file (mirror+file:)."""
    etc = tmp_path / "apt"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "mirrors").mkdir()
    (etc / "mirrors/debian.list").write_text("# the mirrors\nhttp://127.0.0.1:9/debian\tpriority:1\n")
    (etc / "mirrors/debian-security.list").write_text("http://127.0.0.1:9/debian-security\n")
    (etc / "sources.list.d/debian.sources").write_text(
        f"Types: deb deb-src\nURIs: mirror+file://{etc}/mirrors/debian.list\nSuites: bookworm\nComponents: main\n\n"
        f"Types: deb\nURIs: mirror+file://{etc}/mirrors/debian-security.list\nSuites: bookworm-security\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXTRESCUE_")}
    r = host([os.path.join(TOP, "scripts/apt-private"), "mirror"], env=dict(env, EXTRESCUE_HOST_APT_ETC=str(etc)))
    assert r.returncode == 0 and r.stdout.strip() == "http://127.0.0.1:9/debian", r.stdout + r.stderr


def test_check_bin_arch_finds_a_binary_of_another_machine(tmp_path):
    """Every ELF file in the image must be the target's: a copy of a host
    program with its machine field set to AArch64 (183) is named, a script
    and the unchanged program pass."""
    ours, other, script = tmp_path / "ours", tmp_path / "other", tmp_path / "script"
    shutil.copy("/bin/true", ours)
    data = bytearray(ours.read_bytes())
    data[18:20] = (183).to_bytes(2, "little")
    other.write_bytes(bytes(data))
    script.write_text("#!/bin/sh\n")
    machine = "Advanced Micro Devices X86-64"
    check = os.path.join(TOP, "scripts/check-bin-arch")
    assert host([check, "t", machine, str(ours), str(script)]).returncode == 0
    r = host([check, "t", machine, str(ours), str(other), str(script)])
    assert r.returncode != 0 and r.stderr.strip() == f"t: not built for {machine}: other (AArch64); " \
        "check that its build uses the target's compiler", r.stderr


@pytest.fixture
def second_archive(tmp_path):
    """A folder served over HTTP on 127.0.0.1, as a second archive is."""
    root = tmp_path / "archive"
    root.mkdir()
    server = subprocess.Popen(["python3", "-m", "http.server", "--bind", "127.0.0.1", "0", "--directory", str(root)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = server.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N (...)"
        port = int(line.split(" port ")[1].split()[0])
        yield root, f"http://127.0.0.1:{port}"
    finally:
        server.kill()
        server.wait()


def test_a_pin_the_mirror_lost_comes_from_the_second_archive(tmp_path, second_archive):
    """The mirror (here one that has nothing) no longer serves a pinned
    file: make takes it from EXTRESCUE_SNAPSHOT_MIRROR at its place in the
    pool, checks its sha256 and says where it came from; a wrong file there
    stops the build with one line; a verified file is kept under its sha256
    and found there again with no archive at all."""
    root, url = second_archive
    fetch = os.path.join(TOP, "scripts/fetch")
    name, file, want = "lsscsi", pin("lsscsi")[5], pin("lsscsi")[6]
    pins = dict(os.environ, LOCK=PIN_LIST)
    ours = host([fetch, name], cwd=TOP, env=pins).stdout.strip()
    pool = host([fetch, name, "main", "pool"], cwd=TOP, env=pins).stdout.strip()
    assert pool == f"pool/main/l/lsscsi/{file}"
    (root / pool).parent.mkdir(parents=True)
    shutil.copy(ours, root / pool)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXTRESCUE_") and k != "DL_DIR"}
    env.update(EXTRESCUE_CACHE=str(tmp_path / "cache"), EXTRESCUE_MIRROR=f"{url}/debian", EXTRESCUE_SNAPSHOT_MIRROR=url)
    r = make(f"OUT={tmp_path}/out", f"{name}-source", env=env)
    dl = tmp_path / "cache/dl"
    assert r.returncode == 0, r.stderr
    said = [line for line in r.stderr.splitlines() if line.startswith("fetch:")]
    assert len(said) == 1 and f"took it from the second archive: {url}/{pool}" in said[0], r.stderr
    assert sha256(dl / file) == want and sha256(dl / "by-sha256" / want) == want

    # The same name with other bytes in the second archive: refused, not kept.
    (root / pool).write_bytes(b"not lsscsi\n")
    env["EXTRESCUE_CACHE"] = str(tmp_path / "cache2")
    r = make(f"OUT={tmp_path}/out2", f"{name}-source", env=env)
    said = [line for line in r.stderr.splitlines() if line.startswith("fetch:")]
    assert r.returncode != 0 and len(said) == 2 and f"expected {want}; not used" in said[1], r.stderr
    assert not (tmp_path / "cache2/dl" / file).exists()

    # Kept by its sha256: found with neither archive answering.
    (dl / file).unlink()
    env.update(EXTRESCUE_CACHE=str(tmp_path / "cache"), EXTRESCUE_SNAPSHOT_MIRROR="http://127.0.0.1:9", LOCK=PIN_LIST)
    r = host([fetch, name], cwd=TOP, env=env)
    assert r.returncode == 0 and r.stdout.strip() == str(dl / file) and sha256(dl / file) == want, r.stderr
