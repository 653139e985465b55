"""Tools for a failing disk and its EFI partition, used on QEMU's emulated
hardware: fsck.fat repairs an ESP (checked on the host afterwards), hdparm
identifies an AHCI disk, sg3_utils and lsscsi query a SCSI disk through
SG_IO."""
import re
import subprocess

from disks import sha256_file
from harness import host

SCSI_SERIAL = "XRSCSI0042"
MTOOLS_ENV = {"MTOOLS_SKIP_CHECK": "1", "PATH": "/usr/bin:/bin"}


def esp_with_damage(img):
    """A FAT32 ESP with files on it, its dirty bit set and its second FAT
    differing from the first; returns {path: sha256} of the files."""
    subprocess.run(["truncate", "-s", "64M", img], check=True)
    subprocess.run(["mkfs.fat", "-F", "32", "-n", "XRESP", img], check=True, capture_output=True)
    files = {}
    for n, size in enumerate((1000, 70000, 300000)):
        path = f"{img}.f{n}"
        with open(path, "wb") as f:
            f.write(bytes((i * 7 + n) % 251 for i in range(size)))
        files[f"EFI/test/f{n}.efi"] = sha256_file(path)
    subprocess.run(["mmd", "-i", img, "::/EFI", "::/EFI/test"], check=True, env=MTOOLS_ENV)
    for n in range(3):
        subprocess.run(["mcopy", "-i", img, f"{img}.f{n}", f"::/EFI/test/f{n}.efi"], check=True, env=MTOOLS_ENV)
    with open(img, "r+b") as f:
        boot = f.read(512)
        reserved = int.from_bytes(boot[14:16], "little")
        fat_sectors = int.from_bytes(boot[36:40], "little")
        # The dirty bit: bit 0 of the FAT32 boot sector's byte 0x41.
        f.seek(0x41)
        f.write(bytes([boot[0x41] | 1]))
        # Garbage in the second FAT's entries for the files' clusters.
        f.seek((reserved + fat_sectors) * 512 + 12)
        f.write(b"\x55" * 64)
    return files


def test_fat_repair_hdparm_and_scsi_queries(guest, tmp_path):
    esp = str(tmp_path / "esp.img")
    files = esp_with_damage(esp)
    assert host(["fsck.fat", "-n", esp]).returncode != 0, "the damage did not take"
    ata, scsi = str(tmp_path / "ata.img"), str(tmp_path / "scsi.img")
    for img in (ata, scsi):
        subprocess.run(["truncate", "-s", "32M", img], check=True)
    g = guest("disk-tools", ["--direct", "--mem", "512", "--disk", f"{esp},if=virtio-blk,rw",
                             "--disk", f"{ata},if=ahci", "--disk", f"{scsi},if=virtio-scsi,serial={SCSI_SERIAL}"])
    g.wait_shell()

    # fsck.fat: the first FAT wins, the dirty bit goes.
    status, out = g.run("fsck.fat -a -w /dev/vda", timeout=120)
    assert status == 1, f"fsck.fat should report corrected errors: {out}"
    assert re.search(r"FATs differ", out), out
    assert g.run("fsck.fat -n /dev/vda")[0] == 0

    # hdparm: the AHCI disk answers ATA IDENTIFY.
    sd_ata = g.check("for d in /sys/block/sd*; do case $(readlink -f $d) in *ata*) echo ${d##*/};; esac; done").strip()
    assert sd_ata, "no AHCI disk"
    ident = g.check(f"hdparm -I /dev/{sd_ata}")
    assert re.search(r"Model Number:\s+QEMU HARDDISK", ident), ident
    assert "Serial Number:" in ident

    # sg3_utils and lsscsi on the virtio-scsi disk.
    listing = g.check("lsscsi")
    m = re.search(r"^\[\d+:\d+:\d+:\d+\]\s+disk\s+QEMU\s+QEMU HARDDISK\s+\S+\s+(/dev/sd\w+)", listing, re.M)
    assert m, listing
    dev = g.check("for d in /sys/block/sd*; do case $(readlink -f $d) in *virtio*) echo /dev/${d##*/};; esac; done").strip()
    assert m.group(1) == dev, (listing, dev)
    assert SCSI_SERIAL in g.check(f"sg_vpd -p sn {dev}")
    assert "QEMU HARDDISK" in g.check(f"sg_inq {dev}")
    cap = g.check(f"sg_readcap {dev}")
    assert re.search(r"Device size: 33554432 bytes", cap), cap
    g.check(f"sg_turs {dev}")
    assert "Supported VPD pages" in g.check(f"sg_vpd {dev}")
    g.check(f"sg_requests {dev}")
    # QEMU's disk has no LOG SENSE: sg_logs says so, as on a drive without it.
    status, out = g.run(f"sg_logs {dev}")
    assert status == 9 and "Invalid opcode" in out, out
    assert g.poweroff() == 0
    g.assert_no_fatal()

    # On the host: clean, both FATs equal, not dirty, every file intact.
    assert host(["fsck.fat", "-n", esp]).returncode == 0
    with open(esp, "rb") as f:
        boot = f.read(512)
        reserved = int.from_bytes(boot[14:16], "little")
        fat_bytes = int.from_bytes(boot[36:40], "little") * 512
        f.seek(reserved * 512)
        assert f.read(fat_bytes) == f.read(fat_bytes), "the two FATs still differ"
    assert boot[0x41] & 1 == 0, "the dirty bit is still set"
    for rel, digest in files.items():
        out = str(tmp_path / "copy")
        subprocess.run(["mcopy", "-n", "-i", esp, f"::/{rel}", out], check=True, env=MTOOLS_ENV)
        assert sha256_file(out) == digest, rel
