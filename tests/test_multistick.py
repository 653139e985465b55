"""The ISO as a file on a multi-boot stick (tests/multistick.py): its
/boot/grub/loopback.cfg offers the CD menu's entries with the same
parameters as the isolinux and systemd-boot menus; a GRUB stick boots it
by BIOS and UEFI from an exFAT and an ext4 data partition to a root shell
with nothing typed, reads the owner's settings beside the ISO file (the
partition its own boot disk holds, named by GRUB), runs the unattended
check entry, and boots it with Secure Boot on through Debian's shim and
Debian-signed GRUB, which boots the ISO's kernel (signed with the project's
key) through shim."""
import glob
import os
import shutil

import pytest

import multistick
from disks import make_fs
from harness import ARM64_OUT, OUT, PROMPT, TOP, host
from test_secureboot import CERT, assert_locked_down


def iso(out=OUT):
    found = glob.glob(os.path.join(out, "extrescue-*.iso"))
    assert len(found) == 1, f"needs the built ISO in {out} (run make)"
    return found[0]


def iso_file(image, path, tmp_path):
    out = tmp_path / os.path.basename(path)
    r = host(["xorriso", "-osirrox", "on", "-indev", image, "-extract", path, str(out)])
    assert r.returncode == 0 and out.exists(), r.stderr
    return out.read_text()


def isolinux_entries():
    """label -> (title, APPEND) of the CD's menu, the hand-back entry aside."""
    entries, label = {}, None
    for line in open(os.path.join(TOP, "iso", "isolinux.cfg")):
        words = line.split(None, 1)
        if not words:
            continue
        rest = words[1].strip() if len(words) > 1 else ""
        if words[0] == "LABEL":
            label = rest
            entries[label] = ["", ""]
        elif words[0] == "MENU" and rest.startswith("LABEL ") and label:
            entries[label][0] = rest[6:]
        elif words[0] == "APPEND" and label:
            entries[label][1] = rest
        elif words[0] == "LOCALBOOT":
            del entries[label]
    return {k: tuple(v) for k, v in entries.items()}


def loader_entries(folder):
    """label -> (title, options) of a folder of systemd-boot entries."""
    entries = {}
    for path in glob.glob(os.path.join(TOP, "iso", "loader", folder, "*.conf")):
        keys = dict(line.split(None, 1) for line in open(path) if line.strip() and not line.startswith("#"))
        entries[os.path.basename(path)[:-5]] = (keys["title"].strip(), keys["options"].strip())
    return entries


def grub_entries(text, kernel_line):
    """label -> (title, parameters) of loopback.cfg, each entry's kernel line
    (KERNEL_LINE: its first words) with GRUB's own additions taken off."""
    entries, label = {}, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("menuentry "):
            title, label = line.split('"')[1], line.split("--id ")[1].split()[0]
            entries[label] = (title, None)
        elif line.startswith(kernel_line) and label:
            params = line[len(kernel_line):].replace("$xr_iso $xr_stick $extrescue_args", "").strip()
            assert entries[label][1] in (None, params), f"{label}: two kernel lines differ"
            entries[label] = (entries[label][0], params)
    entries.pop("back")
    return entries


def test_the_three_menus_offer_the_same_entries(tmp_path):
    cd = isolinux_entries()
    uefi = loader_entries("entries")
    assert cd == uefi, "iso/isolinux.cfg and iso/loader/entries/ differ"
    text = iso_file(iso(), "/boot/grub/loopback.cfg", tmp_path)
    assert grub_entries(text, "linux /boot/vmlinuz ") == cd
    assert text.count("  initrd /boot/initrd.zst\n") == len(cd)
    # arm64 has no BIOS and no bare kernel on its ISO: the unified image, chainloaded.
    arm64 = glob.glob(os.path.join(ARM64_OUT, "extrescue-*.iso"))
    if arm64:
        (tmp_path / "arm64").mkdir()
        text = iso_file(arm64[0], "/boot/grub/loopback.cfg", tmp_path / "arm64")
        assert "linux /boot/vmlinuz" not in text
        assert grub_entries(text, "chainloader (xr_esp)/EFI/extrescue/extrescue.efi ") == loader_entries("entries-arm64")


SETTINGS = {"cmdline": "# the owner's settings, beside the ISO file\nrescue.settle=2\n"}
BOOTS = [("bios", "exfat"), ("uefi", "ext4"), ("bios", "ext4"), ("uefi", "exfat")]


@pytest.mark.parametrize("firmware,data_fs", BOOTS, ids=[f"{f}-{d}" for f, d in BOOTS])
def test_boots_from_the_iso_file_with_nothing_typed(guest, tmp_path, firmware, data_fs):
    stick = str(tmp_path / "stick.img")
    multistick.build(stick, iso(), data_fs, settings=SETTINGS)
    g = guest(f"multistick-{firmware}-{data_fs}", ["--firmware", firmware, "--medium", "usb", "--iso", stick],
              boot_timeout=300)
    g.wait_shell()
    cmdline = g.check("cat /proc/cmdline")
    part = f"{multistick.SIGNATURE:08x}-02"
    assert f"rescue.iso={multistick.ISO_PATH}" in cmdline and f"rescue.stick=PARTUUID={part}" in cmdline, cmdline
    assert "console=tty0 console=ttyS0,115200n8" in cmdline, cmdline
    # The settings beside the ISO file were read; nothing is written to a
    # partition that is not FAT.
    summary = g.check("cat /run/extrescue/stick/summary")
    assert "Stick: /dev/sda2 (the partition holding the ISO file this system booted from, named by its " \
           f"boot loader), {data_fs if data_fs == 'exfat' else 'ext4'}: read only" in summary, summary
    assert f"booted from the ISO file {multistick.ISO_PATH} on it" in summary, summary
    assert "rescue.settle" in summary, summary
    assert g.check("/lib/extrescue/system/kernel-param settle").strip() == "2"
    assert g.check("cat /run/extrescue/stick/mode").strip() == "ro"
    if firmware == "uefi":
        assert g.check("[ -d /sys/firmware/efi ] && echo efi").strip() == "efi"
    assert g.poweroff() == 0
    g.assert_no_fatal()


def server_disk(path, tmp_path, signature):
    """A server's disk as a hostile one would be made: an MBR disk whose
    partition 2 (ext4) holds a file at the stick's ISO path and an
    extrescue/ folder of its own (rescue.settle=7), with the MBR signature
    SIGNATURE (the stick's own: its PARTUUIDs copied)."""
    tree = tmp_path / "server-tree"
    (tree / "isos").mkdir(parents=True)
    (tree / "isos" / os.path.basename(multistick.ISO_PATH)).write_bytes(b"not the stick's ISO\n")
    (tree / "extrescue").mkdir()
    (tree / "extrescue" / "cmdline").write_text("rescue.settle=7\n")
    with open(path, "wb") as f:
        f.truncate(128 << 20)
    multistick.mbr(path, 128, 0x83, signature)
    with multistick.attached(path) as (_, _, data):
        host(["mkfs.ext4", "-q", "-F", "-d", str(tree), data], check=True)


@pytest.mark.parametrize("copied", [True, False], ids=["partuuid-copied", "same-files"])
def test_a_server_disk_never_stands_in_for_the_stick(guest, tmp_path, copied):
    """A server disk with the ISO's path and settings of its own: GRUB looks
    on its own boot disk only, so the stick's partition is named; a server
    partition that copied its PARTUUID makes the name ambiguous, and then
    nothing is read at all."""
    stick = str(tmp_path / "stick.img")
    multistick.build(stick, iso(), "exfat", settings=SETTINGS)
    disk = str(tmp_path / "server.img")
    server_disk(disk, tmp_path, multistick.SIGNATURE if copied else 0x0DDBA11)
    g = guest(f"multistick-server-{'copied' if copied else 'files'}",
              ["--firmware", "bios", "--medium", "usb", "--iso", stick, "--disk", f"{disk},if=virtio-blk"],
              boot_timeout=300)
    g.wait_shell()
    assert f"rescue.stick=PARTUUID={multistick.SIGNATURE:08x}-02" in g.check("cat /proc/cmdline")
    summary = g.check("cat /run/extrescue/stick/summary")
    settle = g.check("/lib/extrescue/system/kernel-param settle || echo none").strip()
    if copied:
        assert "Stick: none read: rescue.stick=PARTUUID=" in summary and "more than one" in summary, summary
        assert settle == "none"
    else:
        assert "Stick: /dev/sda2 (the partition holding the ISO file" in summary, summary
        assert settle == "2"
    assert g.poweroff() == 0
    g.assert_no_fatal()


def test_the_unattended_check_entry_does_its_work(guest, tmp_path):
    """The stick's menu names loopback.cfg's check entry (extrescue_entry, as
    for iPXE): it boots at once and checks the server's ext4."""
    stick = str(tmp_path / "stick.img")
    multistick.build(stick, iso(), "ext4", entry="check")
    disk = str(tmp_path / "server.img")
    make_fs(disk, "64M", label="serverroot")
    g = guest("multistick-check", ["--firmware", "bios", "--medium", "usb", "--iso", stick,
                                   "--disk", f"{disk},if=virtio-blk"], boot_timeout=300)
    g.wait_shell()
    assert "rescue.fsck=check" in g.check("cat /proc/cmdline")
    log = g.serial_log()
    assert "unattended rescue.fsck=check" in log, log[-2000:]
    # Every ext volume, read-only: the server's and the stick's own ext4.
    results = {r[1]: r for r in (line.split("\t") for line in g.check("cat /run/extrescue/fsck.results").splitlines())}
    assert results["/dev/vda"][:3] + results["/dev/vda"][5:6] == ["check", "/dev/vda", "0", "clean"], results
    assert g.poweroff() == 0
    g.assert_no_fatal()


def test_uefi_chainloads_the_unified_image_from_the_iso(guest, tmp_path):
    """GRUB chainloads the unified image out of the ISO's ESP image, two
    loop devices deep (arm64's loopback.cfg boots so; so does a loader that
    maps the ISO and starts its EFI image): its stub takes the parameters
    GRUB passes, Secure Boot being off."""
    stick = str(tmp_path / "stick.img")
    multistick.build(stick, iso(), "ext4", chain=True)
    g = guest("multistick-chain", ["--firmware", "uefi", "--medium", "usb", "--iso", stick], boot_timeout=300)
    g.wait_shell()
    assert f"rescue.iso={multistick.ISO_PATH}" in g.check("cat /proc/cmdline")
    assert g.poweroff() == 0
    g.assert_no_fatal()


def test_secure_boot_through_debians_shim_and_signed_grub(guest, tmp_path):
    """shim (Microsoft-signed) -> GRUB (Debian-signed, locked down) -> the
    ISO's kernel, signed with the project's key and checked by shim against
    the enrolled MOK. Debian's signed GRUB has no exFAT: ext4 here."""
    stick = str(tmp_path / "stick.img")
    multistick.build(stick, iso(), "ext4", secureboot=True, settings=SETTINGS)
    g = guest("multistick-secureboot", ["--firmware", "uefi", "--secureboot", "--mok", CERT,
                                        "--medium", "usb", "--iso", stick], boot_timeout=400)
    g.wait_shell()
    assert_locked_down(g)
    assert "extrescue (ISO file" in g.serial_log(), "the stick's GRUB menu never showed"
    cmdline = g.check("cat /proc/cmdline")
    assert f"rescue.iso={multistick.ISO_PATH}" in cmdline, cmdline
    assert "booted from the ISO file" in g.check("cat /run/extrescue/stick/summary")
    assert g.poweroff() == 0
    g.assert_no_fatal()


def test_secure_boot_refuses_an_unsigned_kernel(guest, tmp_path):
    """The same chain with the ISO's kernel unsigned (as before this image
    signed it): shim's check fails and GRUB boots nothing."""
    unsigned = str(tmp_path / "unsigned.iso")
    shutil.copyfile(iso(), unsigned)
    kernel = str(tmp_path / "vmlinuz")
    r = host(["xorriso", "-osirrox", "on", "-indev", unsigned, "-extract", "/boot/vmlinuz", kernel])
    assert r.returncode == 0, r.stderr
    os.chmod(kernel, 0o644)
    assert host(["sbattach", "--remove", kernel]).returncode == 0
    r = host(["xorriso", "-dev", unsigned, "-boot_image", "any", "keep", "-update", kernel, "/boot/vmlinuz"])
    assert r.returncode == 0, r.stderr
    stick = str(tmp_path / "stick.img")
    multistick.build(stick, unsigned, "ext4", secureboot=True)
    g = guest("multistick-secureboot-unsigned", ["--firmware", "uefi", "--secureboot", "--mok", CERT,
                                                 "--medium", "usb", "--iso", stick], boot_timeout=400)
    # The chain got as far as GRUB (shim and GRUB verified), and GRUB had
    # shim check the kernel, which failed: no shell follows.
    g.expect([r"extrescue \(ISO file"], 400, "the stick's GRUB menu")
    g.expect([r"bad shim signature"], 120, "shim's refusal of the unsigned kernel")
    with pytest.raises(AssertionError):
        g.expect([PROMPT], 20, "no shell")
    g.kill()
