"""Honest rebuilds: what a package's build does is a stamp (its commands,
flags and --host as make expands them), so a comment in a .mk file redoes
nothing, a changed flag redoes the package or src/, and a kernel config
fragment taken away reconfigures the kernel. Each check parses a copy of the
tree with its own OUT (make version: nothing is built) or builds one host
tool or one small component there (with a build cache of its own), so the
project's own out/ is never touched."""
import glob
import hashlib
import os
import shutil
import subprocess

import pytest

from harness import CCACHE_DIR, HOST_CACHE, TOP, host


@pytest.fixture
def tree(tmp_path):
    """The project's files (what git has or would add), named by a .tarball-version."""
    files = subprocess.run(["git", "-C", TOP, "ls-files", "-z", "--cached", "--others", "--exclude-standard"], capture_output=True, check=True).stdout
    dest = tmp_path / "tree"
    for name in files.decode().split("\0"):
        if name and not name.startswith("tests/") and os.path.lexists(os.path.join(TOP, name)):
            os.makedirs(dest / os.path.dirname(name), exist_ok=True)
            shutil.copy2(os.path.join(TOP, name), dest / name, follow_symlinks=False)
    (dest / ".tarball-version").write_text("0123456789ab 1700000000\n")
    return dest


def make(tree, *args):
    r = host(["make", "--no-print-directory", "-C", str(tree), f"OUT={tree}/out"] + list(args))
    assert r.returncode == 0, r.stderr[-2000:]
    return r


def stamps(tree):
    """{name: (mtime_ns, bytes)} of every stamp make writes as it reads the Makefiles."""
    folder = tree / "out/stamps"
    return {n: ((folder / n).stat().st_mtime_ns, (folder / n).read_bytes()) for n in sorted(os.listdir(folder))}


def edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{path}: '{old}' not found"
    path.write_text(text.replace(old, new, 1))


def prerequisites(tree, target):
    """TARGET's prerequisites in make's database (-p), nothing run."""
    db = host(["make", "-C", str(tree), f"OUT={tree}/out", "-pq", "version"]).stdout
    for line in db.splitlines():
        if line.startswith(f"{target}:") and not line.startswith(f"{target}::"):
            return line.split(":", 1)[1].split("|")[0].split()
    raise AssertionError(f"{target} is not in make's database")


def test_a_comment_in_a_mk_file_redoes_nothing(tree):
    make(tree, "version")
    before = stamps(tree)
    assert {"hdparm-recipe", "linux-recipe", "e2fsprogs-recipe", "src-flags", "loader-entries"} <= set(before)
    for mk in ("mk/pkg.mk", "package/hdparm/hdparm.mk", "package/linux/linux.mk", "mk/src.mk", "mk/toolchain.mk", "Makefile"):
        with open(tree / mk, "a") as f:
            f.write("# a comment a reader added\n")
    make(tree, "version")
    assert stamps(tree) == before, "a comment changed a stamp"
    # And no .mk file is itself a prerequisite of a package's steps.
    for step in ("configured", "built", "installed"):
        prereq = prerequisites(tree, f"{tree}/out/stamps/hdparm-{step}")
        assert not [p for p in prereq if p.endswith(".mk") or p.endswith("Makefile")], prereq


def test_a_changed_flag_redoes_that_package_only(tree):
    make(tree, "version")
    before = stamps(tree)
    edit(tree / "package/hdparm/hdparm.mk", 'CFLAGS="$(TARGET_CFLAGS)"', 'CFLAGS="$(TARGET_CFLAGS) -Os"')
    make(tree, "version")
    after = stamps(tree)
    changed = sorted(n for n in after if after[n] != before.get(n))
    assert changed == ["hdparm-recipe"], changed
    assert b"-Os" in after["hdparm-recipe"][1]
    assert f"{tree}/out/stamps/hdparm-recipe" in prerequisites(tree, f"{tree}/out/stamps/hdparm-configured")
    # --host comes from the architecture's file: changing it there redoes the packages that name it.
    edit(tree / "arch/x86_64.mk", "GNU_TRIPLET := x86_64-linux-musl", "GNU_TRIPLET := x86_64-unknown-linux-musl")
    make(tree, "version")
    stamps_before_cflags = stamps(tree)
    redone = sorted(n for n, v in stamps(tree).items() if v != after.get(n))
    assert {"dosfstools-recipe", "dropbear-recipe", "lsscsi-recipe", "sg3-utils-recipe", "e2fsprogs-recipe",
            "util-linux-recipe", "lvm2-recipe", "popt-recipe"} <= set(redone), redone
    assert "linux-recipe" not in redone and "busybox-recipe" not in redone, redone
    # The toolchain's flags reach the cmake and meson packages through their files.
    edit(tree / "mk/toolchain.mk", "TARGET_CFLAGS := -O2 ", "TARGET_CFLAGS := -Os ")
    make(tree, "version")
    again = stamps(tree)
    redone = sorted(n for n, v in again.items() if v != stamps_before_cflags.get(n))
    assert {"toolchain.cmake", "toolchain.meson", "hdparm-recipe", "e2fsprogs-recipe"} <= set(redone), redone
    assert b"-Os" in again["toolchain.cmake"][1] and b"'-Os'" in again["toolchain.meson"][1]
    assert f"{tree}/out/stamps/toolchain.cmake" in prerequisites(tree, f"{tree}/out/stamps/json-c-configured")
    assert f"{tree}/out/stamps/toolchain.meson" in prerequisites(tree, f"{tree}/out/stamps/cryptsetup-configured")


def test_a_fragment_taken_away_reconfigures_the_kernel(tree):
    make(tree, "version")
    before = stamps(tree)["linux-recipe"]
    assert b"package/linux/config/usb.config" in before[1]
    (tree / "package/linux/config/usb.config").unlink()
    make(tree, "version")
    after = stamps(tree)["linux-recipe"]
    assert after[0] != before[0] and b"usb.config" not in after[1]
    config = f"{tree}/out/build/linux/.config"
    assert f"{tree}/out/stamps/linux-recipe" in prerequisites(tree, config)


def test_changed_cflags_rebuild_src_and_nothing_else(tree):
    tool = f"{tree}/out/build/src/host/cmdline"
    make(tree, tool)
    built = os.stat(tool).st_mtime_ns
    make(tree, tool)
    assert os.stat(tool).st_mtime_ns == built, "rebuilt with nothing changed"
    make(tree, tool, "HOST_TOOL_CFLAGS=-O1 -Wall -Wextra -Werror")
    assert os.stat(tool).st_mtime_ns != built, "new flags did not rebuild src/"
    assert b"-O1" in (tree / "out/stamps/src-flags").read_bytes()


def test_v1_shows_the_commands_and_changes_no_stamp(tree):
    """V=1 shows each command a step runs (Kbuild's $(Q)); without it only
    what the step is doing. Neither is part of what a package's build does."""
    make(tree, "version")
    before = stamps(tree)
    sysroot = f"{tree}/out/stamps/sysroot"
    quiet = make(tree, sysroot)
    assert "mkdir -p" not in quiet.stdout, quiet.stdout
    os.unlink(sysroot)
    loud = make(tree, "V=1", sysroot)
    assert f"mkdir -p {tree}/out/build/sysroot/include" in loud.stdout, loud.stdout
    after = stamps(tree)
    assert {n: v for n, v in after.items() if n != "sysroot"} == {n: v for n, v in before.items() if n != "sysroot"}


def test_a_package_is_one_folder(tree):
    """Each component is package/NAME/: its .mk, its lock file, its patches;
    no *-patches folder is left at the top. A new package's .mk that the
    Makefile's order does not name stops make with one line saying so."""
    assert not [d for d in os.listdir(tree) if d.endswith("-patches") and d != "kernel-patches"]
    for name in os.listdir(tree / "package"):
        files = os.listdir(tree / "package" / name)
        assert [f for f in files if f.startswith(f"{name}.lock")], f"package/{name} has no lock file"
        assert not [f for f in files if f.endswith(".mk") and f != f"{name}.mk"], files
    (tree / "package/zz-new").mkdir()
    (tree / "package/zz-new/zz-new.mk").write_text("# a package a reader added\n")
    r = host(["make", "--no-print-directory", "-C", str(tree), f"OUT={tree}/out", "version"])
    assert r.returncode != 0 and "package/zz-new/zz-new.mk is not in PACKAGE_ORDER" in r.stderr, r.stderr


def test_every_sub_make_in_a_command_block_gets_the_jobserver():
    """A command block (define NAME_CMDS) is several recipe lines, and make
    hands its jobserver only to a line marked + or naming $(MAKE) itself:
    every line of a block that starts a sub-make is marked +, or under make
    -jN that sub-make runs alone ('jobserver unavailable')."""
    unmarked = []
    for mk in glob.glob(os.path.join(TOP, "package/*/*.mk")) + glob.glob(os.path.join(TOP, "mk/*.mk")):
        block = None
        first = None  # a recipe line continued with \\ is one line: the line it began on
        for n, line in enumerate(open(mk), 1):
            head = first or line
            first = head if line.rstrip("\n").endswith("\\") else None
            if line.startswith("define ") and line.rstrip().endswith("_CMDS"):
                block = line.split()[1]
            elif line.startswith("endef"):
                block = None
            elif block and ("$(MAKE)" in line or "_MAKE)" in line) and not head.startswith("\t+"):
                unmarked.append(f"{os.path.relpath(mk, TOP)}:{n} ({block})")
    assert not unmarked, unmarked


def test_a_component_comes_from_the_build_cache_as_built_and_a_flag_rebuilds_it(tree, tmp_path):
    """gddrescue is kept in the build cache after a clean build and taken
    from there when its tree is gone; a changed link flag configures and
    builds it again in a freshly unpacked tree (a file left in the old one
    is gone) and keeps that build too; the flag given back takes the first
    entry again, byte for byte."""
    env = dict(os.environ, EXTRESCUE_CACHE=str(tmp_path / "cache"), EXTRESCUE_BUILD_CACHE="1",
               DL_DIR=os.environ.get("DL_DIR") or os.path.join(HOST_CACHE, "dl"), CCACHE_DIR=CCACHE_DIR)
    src = tree / "out/build/gddrescue-src"
    program = tree / "out/build/gddrescue-root/usr/bin/ddrescue"
    entries = tmp_path / "cache/built" / os.environ.get("EXTRESCUE_ARCH", "x86_64") / "gddrescue"

    def build(*targets):
        r = host(["make", "--no-print-directory", "-C", str(tree), f"OUT={tree}/out", *targets], env=env)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        return r.stdout

    def digest():
        with open(program, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    def build_id():
        return "Build ID" in host(["readelf", "-n", str(src / "ddrescue")]).stdout

    out = build("gddrescue")
    assert "gddrescue: building" in out, out
    assert len(os.listdir(entries)) == 1, os.listdir(entries)
    first = digest()
    build("gddrescue-dirclean")
    out = build("gddrescue")
    assert "gddrescue: building" not in out and "gddrescue: build output" in out, out
    assert digest() == first and build_id()
    (src / "left-from-the-last-build").write_text("")
    edit(tree / "package/gddrescue/gddrescue.mk", 'LDFLAGS="$(TARGET_LDFLAGS)"', 'LDFLAGS="$(TARGET_LDFLAGS) -Wl,--build-id=none"')
    out = build("gddrescue")
    assert "gddrescue: building" in out, out
    assert not (src / "left-from-the-last-build").exists(), "configured again in the old tree"
    assert not build_id(), "the changed flag did not reach the program"
    assert digest() != first and len(os.listdir(entries)) == 2
    edit(tree / "package/gddrescue/gddrescue.mk", 'LDFLAGS="$(TARGET_LDFLAGS) -Wl,--build-id=none"', 'LDFLAGS="$(TARGET_LDFLAGS)"')
    out = build("gddrescue")
    assert "gddrescue: building" not in out and "gddrescue: build output" in out, out
    assert digest() == first and build_id()
