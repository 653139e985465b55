"""Multi-boot USB sticks as administrators make them, with this ISO on them
as a file: an MBR with an EFI system partition (Debian's GRUB for BIOS and
UEFI, or Debian's shim and Debian-signed GRUB for Secure Boot) and a data
partition (exFAT or ext4) holding isos/ and the owner's extrescue/ folder.
The stick's GRUB menu loop-mounts the ISO file and reads the ISO's own
/boot/grub/loopback.cfg.

GRUB goes on as grub-install puts it (README's recipe), by its own parts:
these machines' kernel mounts neither FAT nor exFAT, which grub-install
needs. grub-mkimage makes the BIOS core image and the EFI image with every
module built in; the core image goes after the MBR, boot.img's first 440
bytes into it (boot.img already points at sector 1, and grub-mkimage's
core image at its own remaining sectors); mtools writes the ESP's files;
exFAT is written through FUSE."""
import contextlib
import os
import shutil
import struct
import tempfile
import time

from harness import OUT, host

ISO_PATH = "/isos/extrescue-x86_64.iso"
SIGNATURE = 0x5EC7A11B
ESP_MIB = 48
SHIM_DIR = os.path.join(OUT, "build", "shim-debs", "usr", "lib", "shim")
SIGNED_GRUB = os.path.join(OUT, "build", "grub-signed", "usr", "lib", "grub", "x86_64-efi-signed",
                           "grubx64.efi.signed")
DATA_TYPES = {"exfat": 0x07, "ext4": 0x83}
GRUB_LIB = "/usr/lib/grub"
MODULES = ("part_msdos fat exfat ext2 iso9660 loopback normal configfile search search_fs_uuid linux chain "
           "regexp probe test echo serial terminal sleep").split()


def mbr(path, total_mib, data_type, signature=SIGNATURE):
    """An MBR with two primary partitions: the ESP (type EF, active: some
    BIOSes boot only a disk with one) from 1 MiB, the data partition after it."""
    spm = 2048                                  # 512-byte sectors per MiB
    entries = b""
    for active, ptype, start, size in ((0x80, 0xEF, spm, ESP_MIB * spm),
                                       (0, data_type, (1 + ESP_MIB) * spm, (total_mib - 1 - ESP_MIB) * spm)):
        # CHS fields as "use LBA" (FE FF FF): every firmware since the 90s reads the LBA ones.
        entries += struct.pack("<B3sB3sII", active, b"\xfe\xff\xff", ptype, b"\xfe\xff\xff", start, size)
    with open(path, "r+b") as f:
        f.seek(440)
        f.write(struct.pack("<IH", signature, 0) + entries + b"\0" * 32 + b"\x55\xaa")


@contextlib.contextmanager
def attached(img):
    """IMG on a loop device with its partitions: (disk, esp, data)."""
    dev = host(["losetup", "--find", "--show", img], check=True).stdout.strip()
    try:
        # Added from the table by partx, as the host's kernel may read no MBR
        # itself (these machines' kernel has no msdos partition support).
        host(["partx", "--add", dev], check=True)
        for _ in range(50):
            if os.path.exists(dev + "p2"):
                break
            time.sleep(0.1)
        yield dev, dev + "p1", dev + "p2"
    finally:
        host(["partx", "--delete", dev])
        host(["losetup", "-d", dev])


@contextlib.contextmanager
def data_tree(dev, fs):
    """A folder whose files end up on DEV as a new FS: exFAT written through
    exfat-fuse, ext4 made from the folder (mkfs.ext4 -d)."""
    d = tempfile.mkdtemp(prefix="multistick-data-")
    try:
        if fs == "exfat":
            host(["mkfs.exfat", "-L", "MULTIDATA", dev], check=True)
            host(["mount.exfat-fuse", dev, d], check=True)
            try:
                yield d
            finally:
                host(["umount", d], check=True)
        else:
            yield d
            host(["mkfs.ext4", "-q", "-F", "-L", "MULTIDATA", "-d", d, dev], check=True)
    finally:
        shutil.rmtree(d)


def esp_files(work, esp_uuid, secureboot):
    """[(file in WORK, its place on the ESP)] of GRUB: for Secure Boot shim,
    MokManager and Debian's signed GRUB (which finds /boot/grub/grub.cfg on
    the disk it came from); else GRUB's EFI image and, in WORK, its BIOS
    core image, both finding the ESP by its UUID as grub-install's do."""
    if secureboot:
        return [(os.path.join(SHIM_DIR, "shimx64.efi.signed"), "::/EFI/BOOT/BOOTX64.EFI"),
                (os.path.join(SHIM_DIR, "mmx64.efi.signed"), "::/EFI/BOOT/mmx64.efi"),
                (SIGNED_GRUB, "::/EFI/BOOT/grubx64.efi")]
    early = os.path.join(work, "early.cfg")
    with open(early, "w") as f:
        f.write(f"search --no-floppy --fs-uuid --set=root {esp_uuid}\nset prefix=($root)/boot/grub\n")
    efi = os.path.join(work, "BOOTX64.EFI")
    for fmt, out, extra in (("i386-pc", os.path.join(work, "core.img"), ["biosdisk"]),
                            ("x86_64-efi", efi, ["efi_gop"])):
        host(["grub-mkimage", "-O", fmt, "-d", os.path.join(GRUB_LIB, fmt), "-o", out, "-c", early,
              "-p", "/boot/grub", *MODULES, *extra], check=True)
    return [(efi, "::/EFI/BOOT/BOOTX64.EFI")]


def embed_core(img, core):
    """GRUB's BIOS boot code: boot.img's code into the MBR (its table and
    signature kept), the core image from sector 1, before the ESP at 1 MiB."""
    with open(os.path.join(GRUB_LIB, "i386-pc", "boot.img"), "rb") as f:
        boot = f.read(440)
    with open(core, "rb") as f:
        body = f.read()
    assert len(body) <= (2048 - 1) * 512, f"GRUB's core image ({len(body)} bytes) does not fit before the ESP"
    with open(img, "r+b") as f:
        f.write(boot)
        f.seek(512)
        f.write(body)


def menu(data_uuid, entry=None, args="", chain=False):
    """The stick's grub.cfg: one entry per ISO, on partition 2 of the disk
    GRUB itself came from ($cmdpath), never searched for by a name or UUID a
    server's disk could also hold; DATA_UUID is checked there.
    CHAIN: the unified image chainloaded from the ISO's ESP image instead
    of loopback.cfg (how arm64's loopback.cfg boots)."""
    # Indented for the else branch below.
    boot = "    set root=(loop)\n    configfile /boot/grub/loopback.cfg\n"
    if chain:
        boot = ("    insmod chain\n    insmod fat\n    loopback esp (loop)/boot/efiboot.img\n"
                "    chainloader (esp)/EFI/extrescue/extrescue.efi console=ttyS0,115200n8 rescue.iso=$iso_path\n")
    preset = ""
    if entry:
        preset += f"    set extrescue_entry={entry}\n    export extrescue_entry\n"
    if args:
        preset += f'    set extrescue_args="{args}"\n    export extrescue_args\n'
    return f"""serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
set timeout=1
set default=0
insmod part_msdos
insmod exfat
insmod ext2
insmod iso9660
insmod loopback
insmod regexp
insmod probe
menuentry "extrescue (ISO file {ISO_PATH})" {{
  regexp --set=1:bootdisk '^\\(([^,)]+)' "$cmdpath"
  set isodev=$bootdisk,msdos2
  probe --set=found --fs-uuid ($isodev)
  if [ "$found" != "{data_uuid}" ]; then
    echo "($isodev) is not this stick's data partition"
    sleep 10
  else
    set iso_path={ISO_PATH}
    export iso_path
{preset}    loopback loop ($isodev)$iso_path
{boot}  fi
}}
"""


def build(img, iso, data_fs="exfat", secureboot=False, entry=None, args="", settings=None, chain=False):
    """Writes the stick IMG. SETTINGS: {name: text} of its extrescue/ folder."""
    total = ESP_MIB + 1 + max(64, os.path.getsize(iso) // (1 << 20) + 32)
    with open(img, "wb") as f:
        f.truncate(total << 20)
    mbr(img, total, DATA_TYPES[data_fs])
    work = tempfile.mkdtemp(prefix="multistick-esp-")
    try:
        with attached(img) as (disk, esp, data):
            host(["mkfs.vfat", "-F", "16", "-n", "MULTIESP", esp], check=True)
            with data_tree(data, data_fs) as d:
                os.makedirs(os.path.dirname(d + ISO_PATH))
                shutil.copyfile(iso, d + ISO_PATH)
                if settings:
                    os.makedirs(os.path.join(d, "extrescue"))
                    for name, text in settings.items():
                        with open(os.path.join(d, "extrescue", name), "w") as f:
                            f.write(text)
            uuid = host(["blkid", "-s", "UUID", "-o", "value", data], check=True).stdout.strip()
            esp_uuid = host(["blkid", "-s", "UUID", "-o", "value", esp], check=True).stdout.strip()
            files = esp_files(work, esp_uuid, secureboot)
            with open(os.path.join(work, "grub.cfg"), "w") as f:
                f.write(menu(uuid, entry, args, chain))
            files.append((os.path.join(work, "grub.cfg"), "::/boot/grub/grub.cfg"))
            for folder in ("::/EFI", "::/EFI/BOOT", "::/boot", "::/boot/grub"):
                host(["mmd", "-i", esp, folder], check=True)
            for src, dst in files:
                host(["mcopy", "-i", esp, src, dst], check=True)
        # Into the image file once no loop device holds it.
        if not secureboot:
            embed_core(img, os.path.join(work, "core.img"))
    finally:
        shutil.rmtree(work)
    return uuid
