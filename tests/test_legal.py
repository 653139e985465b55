"""What a distributor relies on: Debian's patches really applied, every file of
the image owned by a component with its licence and sources in
out/legal-info, those sources rebuilding the same binaries, and stamps that
rebuild only what a change touches."""
import hashlib
import os
import shutil
import struct
import subprocess
import tarfile

import pytest

from harness import ARM64_OUT, CCACHE_DIR, OUT, TOP, host, lock_lines, pe_section

BUILD = os.path.join(OUT, "build")
STAMPS = os.path.join(OUT, "stamps")
LEGAL = os.path.join(OUT, "legal-info")


def make(*args, **kw):
    return host(["make", "--no-print-directory", "-C", TOP] + list(args), **kw)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()




def tsv(path):
    with open(path) as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def cpio_files(data):
    """name -> content of the regular files in a newc cpio archive."""
    files, pos = {}, 0
    while True:
        hdr = data[pos:pos + 110]
        assert hdr[:6] == b"070701", f"not a newc cpio at {pos}"
        mode = int(hdr[14:22], 16)
        size, namesize = int(hdr[54:62], 16), int(hdr[94:102], 16)
        name = data[pos + 110:pos + 110 + namesize - 1].decode()
        pos = (pos + 110 + namesize + 3) & ~3
        if name == "TRAILER!!!":
            return files
        if mode & 0o170000 == 0o100000:
            files["/" + name.lstrip("/")] = data[pos:pos + size]
        pos = (pos + size + 3) & ~3


def without_pe_checksum(data):
    """A PE file's bytes but its optional header's checksum field."""
    pe = struct.unpack_from("<I", data, 0x3C)[0]
    return data[:pe + 88] + data[pe + 92:]


def read_image(out, arch, folder):
    """The files a machine boots, read back from ARCH's ISO in OUT: its
    ISO 9660 side (ROOT), the files of its EFI system partition, and the
    initramfs's files from the signed unified image there (name -> bytes),
    and the sha256 of the kernel there."""
    iso = [f for f in os.listdir(out) if f.startswith("extrescue-") and f.endswith(f"-{arch}.iso")]
    assert len(iso) == 1, f"needs the built {arch} ISO (run make)"
    root = folder / "iso"
    r = host(["xorriso", "-osirrox", "on", "-indev", os.path.join(out, iso[0]), "-extract", "/", str(root)])
    assert r.returncode == 0, r.stderr
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    esp = folder / "esp"
    subprocess.run(["mcopy", "-s", "-n", "-i", str(root / "boot/efiboot.img"), "::/EFI", str(esp)],
                   check=True, env=env, capture_output=True)
    esp_files = {os.path.relpath(os.path.join(d, f), esp): os.path.join(d, f)
                 for d, _, fs in os.walk(esp) for f in fs}
    with open(esp / "extrescue/extrescue.efi", "rb") as f:
        uki = f.read()
    off, size = pe_section(uki, ".initrd")
    cpio = subprocess.run(["zstd", "-dc"], input=uki[off:off + size], capture_output=True, check=True).stdout
    off, size = pe_section(uki, ".linux")
    kernel = hashlib.sha256(uki[off:off + size]).hexdigest()
    return root, esp_files, cpio_files(cpio), kernel


def make_legal_info(arch, out):
    r = make(f"EXTRESCUE_ARCH={arch}", f"OUT={out}", "legal-info")
    assert r.returncode == 0, r.stderr
    return os.path.join(out, "legal-info")


@pytest.fixture(scope="module")
def legal_info():
    return make_legal_info("x86_64", OUT)


def assert_owned(legal, shipped, initramfs, index):
    """Every file in SHIPPED (path -> sha256) has a component in LEGAL's
    files.tsv, every component its licence texts (in legal-info and the
    image) and a line in the ISO's LICENSES (INDEX), and the sources are
    what the table says."""
    table = tsv(os.path.join(legal, "table.tsv"))
    components = {row["component"] for row in table}
    owners = {}
    for row in tsv(os.path.join(legal, "files.tsv")):
        owners.setdefault(row["sha256"], set()).add(row["component"])
    assert len(shipped) > 20, sorted(shipped)
    for path, digest in sorted(shipped.items()):
        assert digest in owners, f"{path} is in the image but in no component of legal-info"
        assert owners[digest] <= components, f"{path}: {owners[digest]} not in table.tsv"
    for name in components:
        texts = os.path.join(legal, "licenses", name)
        assert os.path.isdir(texts) and os.listdir(texts), f"{name}: no licence file in legal-info"
        assert any(p.startswith(f"/usr/share/licenses/{name}/") for p in initramfs), \
            f"{name}: no licence text in the image"
        assert f"\n{name} " in index, f"{name} missing from the ISO's LICENSES"
    for row in table:
        if row["file"] != "-":
            assert sha256(os.path.join(legal, row["file"])) == row["sha256"], row["file"]
    kinds = {f[0]: f[2] for f in lock_lines()}
    for name in components:
        files = [r["file"] for r in table if r["component"] == name]
        if kinds.get(name) == "src":
            assert any(f.endswith(".debian.tar.xz") for f in files), f"{name}: no Debian patch archive"
    return components


def shipped_files(esp_files, initramfs, kernel):
    """path -> sha256 of every program in the initramfs, every EFI binary on
    the ESP and the kernel in the unified image."""
    shipped = {p: hashlib.sha256(d).hexdigest() for p, d in initramfs.items() if d[:4] == b"\x7fELF"}
    shipped.update({f"efiboot.img:/EFI/{rel}": sha256(path) for rel, path in esp_files.items()})
    shipped["extrescue.efi:.linux"] = kernel
    return shipped


def test_debian_patches_are_applied_before_ours():
    # Only Debian's shell-ash-export-HOME.patch exports PATH from ash's defaults.
    with open(os.path.join(BUILD, "busybox/shell/ash.c")) as f:
        assert "VSTRFIXED|VTEXTFIXED|VEXPORT, bb_PATH_root_path" in f.read(), \
            "Debian's busybox patch shell-ash-export-HOME.patch is not in the built source"
    with open(os.path.join(OUT, "manifest")) as f:
        manifest = f.read()
    section = manifest.split("## patches applied to busybox, in order: origin file sha256\n")[1].split("\n\n")[0]
    origins = [line.split()[0] for line in section.splitlines()]
    names = [line.split()[1] for line in section.splitlines()]
    assert "shell-ash-export-HOME.patch" in names
    assert "0001-syslogd-pass-getsockname-a-sockaddr-pointer.patch" in names
    assert origins == sorted(origins), f"Debian's patches must all come before ours: {origins}"
    # Every Debian source pin says so in the manifest; every upstream pin too.
    for fields in lock_lines():
        if fields[2] == "src":
            assert fields[7].endswith(".debian.tar.xz"), fields
        if fields[2] == "orig":
            assert fields[7] == "-", fields
    assert "\nlinux orig " in manifest and "\nbusybox src " in manifest


def test_corrupt_debian_patch_archive_stops_the_build_with_its_name(tmp_path):
    fields = next(f for f in lock_lines() if f[0] == "e2fsprogs")
    dl = tmp_path / "dl"
    dl.mkdir()
    cache = os.environ.get("DL_DIR", os.path.expanduser("~/.cache/extrescue/dl"))
    shutil.copy(os.path.join(cache, fields[5]), dl / fields[5])
    patches = dl / fields[7]
    shutil.copy(os.path.join(cache, fields[7]), patches)
    with open(patches, "r+b") as f:
        f.seek(2000)
        f.write(b"\x00garbage\x00")
    # No mirror to fetch a good copy from: the build must stop, not go on without it.
    env = dict(os.environ, DL_DIR=str(dl), EXTRESCUE_CACHE=str(tmp_path / "cache"),
               EXTRESCUE_MIRROR="http://127.0.0.1:9/debian")
    r = make(f"OUT={tmp_path}/out", "e2fsprogs-source", env=env)
    assert r.returncode != 0, "the build went on with a corrupt Debian patch archive"
    assert fields[7] in r.stderr and "corrupt" in r.stderr, r.stderr
    assert not os.path.exists(tmp_path / "out/stamps/e2fsprogs-source")


def test_every_file_of_the_image_belongs_to_a_licensed_component(legal_info, tmp_path):
    root, esp_files, initramfs, kernel = read_image(OUT, "x86_64", tmp_path)
    shipped = shipped_files(esp_files, initramfs, kernel)
    # isolinux's kernel is the unified image's, signed with the project's key
    # (a multi-boot stick's GRUB boots it with Secure Boot on): the same bytes
    # once the signature is off, but for the PE checksum that signing changed.
    with open(esp_files["extrescue/extrescue.efi"], "rb") as f:
        uki = f.read()
    off, size = pe_section(uki, ".linux")
    assert hashlib.sha256(uki[off:off + size]).hexdigest() == kernel
    bare = tmp_path / "vmlinuz"
    shutil.copyfile(root / "boot/vmlinuz", bare)
    assert host(["sbattach", "--remove", str(bare)]).returncode == 0, "the ISO's kernel carries no signature"
    assert without_pe_checksum(bare.read_bytes()) == without_pe_checksum(uki[off:off + size]), \
        "isolinux's kernel is not the unified image's"
    # The BIOS side reads the same initramfs as a file of the ISO.
    cpio = subprocess.run(["zstd", "-dc", str(root / "boot/initrd.zst")], capture_output=True, check=True).stdout
    assert cpio_files(cpio) == initramfs, "the ISO's initrd.zst is not the unified image's initramfs"
    for rel in ("boot/vmlinuz", "isolinux/ldlinux.c32", "isolinux/menu.c32"):
        shipped["iso:/" + rel] = sha256(root / rel)
    # xorriso writes the boot info table (bytes 8 to 63) into the ISO's copy
    # of isolinux.bin; the rest must be Debian's file.
    debian = os.path.join(BUILD, "boot-debs/usr/lib/ISOLINUX/isolinux.bin")
    with open(root / "isolinux/isolinux.bin", "rb") as a, open(debian, "rb") as b:
        assert a.read()[64:] == b.read()[64:], "the ISO's isolinux.bin is not Debian's"
    shipped["iso:/isolinux/isolinux.bin (before the boot info table)"] = sha256(debian)
    with open(root / "LICENSES") as f:
        assert_owned(legal_info, shipped, initramfs, f.read())


def test_every_file_of_the_arm64_image_belongs_to_a_licensed_component(tmp_path):
    """The same for arm64: its own legal-info (the cross toolchain's libc
    and runtime, gdisk's pinned libraries), no isolinux, and an ISO that
    carries the kernel and initramfs once, in the unified image."""
    legal = make_legal_info("arm64", ARM64_OUT)
    root, esp_files, initramfs, kernel = read_image(ARM64_OUT, "arm64", tmp_path)
    assert not [p for p in ("isolinux", "boot/vmlinuz", "boot/initrd.zst") if os.path.exists(root / p)]
    assert {"BOOT/BOOTAA64.EFI", "BOOT/mmaa64.efi", "BOOT/grubaa64.efi"} <= set(esp_files), sorted(esp_files)
    machines = {struct.unpack_from("<H", d, 18)[0] for d in initramfs.values() if d[:4] == b"\x7fELF"}
    assert machines == {183}, f"ELF machines in the arm64 initramfs: {machines} (183 is AArch64)"
    with open(root / "LICENSES") as f:
        components = assert_owned(legal, shipped_files(esp_files, initramfs, kernel), initramfs, f.read())
    assert not components & {"isolinux", "syslinux-common", "syslinux"}, components


def test_e2fsprogs_rebuilds_the_same_from_legal_info_alone(legal_info, tmp_path):
    # The build tree is our own source archive from legal-info, the download
    # cache only legal-info's files, and no mirror: no other source is
    # reachable. The compiler cache is the one the build filled: a hit needs
    # the same sources, headers and flags, so it stands in for no file.
    archive = [f for f in os.listdir(os.path.join(LEGAL, "sources/extrescue")) if f.endswith(".tar.gz")]
    with tarfile.open(os.path.join(LEGAL, "sources/extrescue", archive[0])) as t:
        t.extractall(tmp_path, **({"filter": "fully_trusted"} if hasattr(tarfile, "data_filter") else {}))
    tree = tmp_path / archive[0][:-len(".tar.gz")]
    dl = tmp_path / "dl"
    dl.mkdir()
    for d, _, files in os.walk(os.path.join(LEGAL, "sources")):
        for f in files:
            if not (dl / f).exists():  # isolinux and syslinux-common share one source
                os.symlink(os.path.join(d, f), dl / f)
    env = dict(os.environ, DL_DIR=str(dl), EXTRESCUE_CACHE=str(tmp_path / "cache"), CCACHE_DIR=CCACHE_DIR,
               EXTRESCUE_MIRROR="http://127.0.0.1:9/debian")
    r = host(["make", "--no-print-directory", "-C", str(tree), "e2fsprogs"], env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    ours = os.path.join(BUILD, "e2fsprogs-root/sbin")
    theirs = tree / "out/x86_64/build/e2fsprogs-root/sbin"
    differ = [p for p in sorted(os.listdir(ours))
              if not os.path.islink(os.path.join(ours, p)) and sha256(os.path.join(ours, p)) != sha256(theirs / p)]
    assert not differ, f"rebuilt from legal-info, these differ from the image's: {differ}"


@pytest.mark.serial
def test_a_change_to_one_component_rebuilds_only_it_and_the_image():
    """A comment in a component's .mk and in the shared pkg.mk: nothing to
    do. A flag changed in it: that component and the image, nothing else.
    The files are given back and built again as committed. The edits make
    the tree -dirty, so the build keeps the name and date it had."""
    epoch, version = open(os.path.join(STAMPS, "epoch")).read().split()
    named = (f"VERSION={version}", f"SOURCE_DATE_EPOCH={epoch}")

    def make(*args):
        # x86_64's tree only: the arm64 one would rebuild its mdadm as well.
        return host(["make", "--no-print-directory", "-C", TOP, "ARCH=x86_64", *named, *args])
    assert make("-q", "all").returncode == 0, "make all is not up to date before the test"
    watched = ["linux-built", "e2fsprogs-built", "busybox-built", "cryptsetup-built",
               "mdadm-configured", "mdadm-built", "mdadm-installed"]
    before = {s: os.stat(os.path.join(STAMPS, s)).st_mtime_ns for s in watched}
    iso = [f for f in os.listdir(OUT) if f.endswith(".iso")][0]
    iso_before = os.stat(os.path.join(OUT, iso)).st_mtime_ns
    files = {f: open(os.path.join(TOP, f)).read() for f in ("package/mdadm/mdadm.mk", "mk/pkg.mk")}
    try:
        for f, text in files.items():
            with open(os.path.join(TOP, f), "w") as out:
                out.write(text + "# a comment a reader added\n")
        assert make("-q", "all").returncode == 0, "a comment in a .mk file left work to do"
        assert "-DNO_LIBUDEV\"" in files["package/mdadm/mdadm.mk"]
        with open(os.path.join(TOP, "package/mdadm/mdadm.mk"), "w") as out:
            out.write(files["package/mdadm/mdadm.mk"].replace("-DNO_LIBUDEV\"", "-DNO_LIBUDEV -DXR_REBUILD_TEST\""))
        r = make("all")
        assert r.returncode == 0, r.stderr
        after = {s: os.stat(os.path.join(STAMPS, s)).st_mtime_ns for s in watched}
        redone = sorted(s for s in watched if after[s] != before[s])
        assert redone == ["mdadm-built", "mdadm-configured", "mdadm-installed"], redone
        assert os.stat(os.path.join(OUT, iso)).st_mtime_ns != iso_before, "the image was not rebuilt"
        assert make("-q", "all").returncode == 0, "a second make would do more work"
    finally:
        for f, text in files.items():
            with open(os.path.join(TOP, f), "w") as out:
                out.write(text)
        assert make("all").returncode == 0, "the build as committed did not come back"
