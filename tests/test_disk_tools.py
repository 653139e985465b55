"""Tools for a failing disk and its EFI partition, used on QEMU's emulated
hardware: fsck.fat repairs an ESP (checked on the host afterwards), hdparm
identifies an AHCI disk, smartctl reads its SMART data and an NVMe
controller's health log (nvme reads it too), sg3_utils and lsscsi query a
SCSI disk through SG_IO, sgdisk rebuilds a GPT from its backup, ddrescue
images a disk that fails reads of known sectors, and efibootmgr writes,
keeps and deletes a firmware boot entry under OVMF."""
import hashlib
import re
import subprocess

from disks import blank, sha256_file
from harness import host
from stacks import LUKS_FORMAT, PASS

SCSI_SERIAL = "XRSCSI0042"
GPT_SERIAL = "XRGPT0007"
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


def gpt_with_damage(img):
    """A 64 MiB GPT disk with two partitions full of known bytes, then its
    primary header and table zeroed; returns the partitions' sha256s."""
    blank(img, "64M")
    subprocess.run(["sgdisk", "-n1:2048:+20M", "-t1:8300", "-c1:xrone", "-n2:0:0", "-t2:8304", "-c2:xrtwo", img],
                   check=True, capture_output=True)
    table = host(["sgdisk", "-p", img]).stdout
    parts = [(int(a), int(b)) for a, b in re.findall(r"^\s+\d+\s+(\d+)\s+(\d+)", table, re.M)]
    assert len(parts) == 2, table
    digests = []
    with open(img, "r+b") as f:
        for n, (first, last) in enumerate(parts):
            f.seek(first * 512)
            data = bytes((i * 13 + n) % 253 for i in range((last - first + 1) * 512))
            f.write(data)
            digests.append(hashlib.sha256(data).hexdigest())
        f.seek(512)
        f.write(bytes(33 * 512))           # LBA 1: the header, 2-33: the table
    r = host(["sgdisk", "-v", img])
    assert "No problems found" not in r.stdout + r.stderr, "the damage did not take"
    return parts, digests


def test_fat_repair_hdparm_and_scsi_queries(guest, tmp_path):
    esp = str(tmp_path / "esp.img")
    files = esp_with_damage(esp)
    assert host(["fsck.fat", "-n", esp]).returncode != 0, "the damage did not take"
    gpt = str(tmp_path / "gpt.img")
    parts, part_digests = gpt_with_damage(gpt)
    ata, scsi, nvme = (str(tmp_path / f"{n}.img") for n in ("ata", "scsi", "nvme"))
    for img in (ata, scsi, nvme):
        subprocess.run(["truncate", "-s", "32M", img], check=True)
    g = guest("disk-tools", ["--direct", "--mem", "512", "--disk", f"{esp},if=virtio-blk,rw",
                             "--disk", f"{ata},if=ahci", "--disk", f"{scsi},if=virtio-scsi,serial={SCSI_SERIAL}",
                             "--disk", f"{nvme},if=nvme", "--disk", f"{gpt},if=virtio-blk,rw,serial={GPT_SERIAL}"])
    g.wait_shell()

    # sgdisk: the primary GPT is rebuilt from the backup; the kernel then
    # reads the table again and sees both partitions.
    vd_gpt = g.check(f"grep -l {GPT_SERIAL} /sys/block/vd*/serial").split("/")[3]
    status, out = g.run(f"sgdisk -v /dev/{vd_gpt}")
    assert "Main header: ERROR" in out and "Backup header: OK" in out, out
    out = g.check(f"sgdisk -e /dev/{vd_gpt}")
    assert "operation has completed successfully" in out, out
    out = g.check(f"sgdisk -v /dev/{vd_gpt}")
    assert "No problems found" in out, out
    g.check(f"blockdev --rereadpt /dev/{vd_gpt}")
    g.check(f"test -d /sys/block/{vd_gpt}/{vd_gpt}1 && test -d /sys/block/{vd_gpt}/{vd_gpt}2")
    assert "xrtwo" in g.check(f"sgdisk -i 2 /dev/{vd_gpt}")

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

    # smartctl: the AHCI disk's SMART data and the NVMe controller's health log.
    status, out = g.run(f"smartctl -a /dev/{sd_ata}")
    assert status & 0b11 == 0, out                  # bits 0-1: command line or device open failed
    assert "SMART overall-health self-assessment test result: PASSED" in out, out
    assert re.search(r"Device Model:\s+QEMU HARDDISK", out), out
    status, out = g.run("smartctl -a /dev/nvme0")
    assert status & 0b11 == 0, out
    assert "SMART overall-health self-assessment test result: PASSED" in out, out
    assert re.search(r"SMART/Health Information \(NVMe Log 0x02", out), out

    # nvme: the same drive through NVMe admin commands; its health log says
    # what smartctl read.
    serial = g.check("cat /sys/class/nvme/nvme0/serial").strip()
    listing = g.check("nvme list")
    assert re.search(rf"^/dev/nvme0n1\s+{serial}\s+QEMU NVMe Ctrl\s+1\s+0\.03 GB 512 B$", listing, re.M), listing
    ident = g.check("nvme id-ctrl /dev/nvme0")
    assert re.search(r"^mn\s+: QEMU NVMe Ctrl$", ident, re.M) and re.search(rf"^sn\s+: {serial}$", ident, re.M), ident
    health = g.check("nvme smart-log /dev/nvme0")
    assert re.search(r"^critical_warning\s+: 0$", health, re.M), health
    for ours, theirs in (("temperature", r"Temperature:\s+(\d+) Celsius"), ("power_cycles", r"Power Cycles:\s+(\d+)"),
                         ("power_on_hours", r"Power On Hours:\s+(\d+)")):
        mine = re.search(rf"^{ours}\s+: (\d+)", health, re.M)
        assert mine and mine.group(1) == re.search(theirs, out).group(1), (ours, health, out)
    assert "Error Log Entries for device:nvme0" in g.check("nvme error-log /dev/nvme0")
    assert g.run("nvme format /dev/nvme0n1")[0] == 2

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

    # The GPT: the host's sgdisk finds nothing wrong, the contents are intact.
    out = host(["sgdisk", "-v", gpt]).stdout
    assert "No problems found" in out, out
    with open(gpt, "rb") as f:
        for (first, last), digest in zip(parts, part_digests):
            f.seek(first * 512)
            assert hashlib.sha256(f.read((last - first + 1) * 512)).hexdigest() == digest


BAD_SECTORS = [1000, 1001, 5003, 12345]


def test_ddrescue_copies_around_read_errors(guest, tmp_path):
    """A disk that fails reads of known sectors (QEMU's blkdebug under the
    raw format) is imaged to a second disk: the mapfile names exactly those
    sectors as bad, a retry pass keeps it so, every other byte is copied."""
    src = str(tmp_path / "failing.img")
    with open(src, "wb") as f:
        for i in range(16 * 2048):      # 16 MiB, every sector different
            f.write(i.to_bytes(4, "little") * 128)
    dst = blank(str(tmp_path / "copy.img"), "16M")
    cfg = tmp_path / "blkdebug.conf"
    cfg.write_text("".join(f'[inject-error]\nevent = "read_aio"\nerrno = "5"\nsector = "{s}"\nonce = "off"\n\n'
                           for s in BAD_SECTORS))
    before = sha256_file(src)
    g = guest("ddrescue", ["--direct", "--mem", "512", "--disk", f"{dst},if=virtio-blk,rw,serial=XRCOPY", "--",
                           "-drive", f"if=none,id=failing,format=raw,readonly=on,file.driver=blkdebug,"
                           f"file.config={cfg},file.image.driver=file,file.image.filename={src}",
                           "-device", "virtio-blk-pci,drive=failing,serial=XRFAILING"])
    g.wait_shell()
    name = {g.check(f"cat /sys/block/{d}/serial").strip(): d for d in g.check("ls /sys/block | grep ^vd").split()}
    failing, copy = "/dev/" + name["XRFAILING"], "/dev/" + name["XRCOPY"]
    # -d: O_DIRECT reads of one sector each, so an error is that sector, not its page.
    out = g.check(f"ddrescue -d -b 512 -f {failing} {copy} /tmp/map", timeout=300)
    rate = re.findall(r"average rate:\s+([\d.]+ \S+)", out)
    g.check(f"ddrescue -d -b 512 -f -r3 {failing} {copy} /tmp/map", timeout=300)
    mapfile = g.check("cat /tmp/map")
    print(f"ddrescue on the blkdebug disk, first pass: average rate {rate}")
    assert g.poweroff() == 0

    bad = []
    for m in re.finditer(r"^0x([0-9A-Fa-f]+)\s+0x([0-9A-Fa-f]+)\s+(\S)\s*$", mapfile, re.M):
        pos, size, status = int(m.group(1), 16), int(m.group(2), 16), m.group(3)
        assert status in "+-", mapfile
        if status == "-":
            bad += range(pos // 512, (pos + size) // 512)
    assert bad == BAD_SECTORS, (bad, mapfile, rate)
    assert sha256_file(src) == before, "the failing disk was written"
    with open(src, "rb") as a, open(dst, "rb") as b:
        for sector in range(16 * 2048):
            want, got = a.read(512), b.read(512)
            if sector in BAD_SECTORS:
                assert got == bytes(512), f"sector {sector} was never read but is not zero"
            else:
                assert got == want, f"sector {sector} differs"


def test_luks_with_serpent_twofish_and_ripemd160_opens(guest, tmp_path):
    """LUKS2 with serpent-xts and twofish-xts, LUKS1 with a ripemd160 hash
    (older installers' choices): made in the image, opened read-only by
    rescue-assemble with the passphrase, their ext4 checks clean."""
    disks = [blank(str(tmp_path / f"{n}.img"), "24M") for n in ("serpent", "twofish", "rmd")]
    args = ["--direct", "--mem", "768"]
    for d in disks:
        args += ["--disk", f"{d},if=virtio-blk,rw"]
    g = guest("luks-ciphers", args)
    g.wait_shell()
    formats = {"/dev/vda": f"{LUKS_FORMAT} --cipher serpent-xts-plain64",
               "/dev/vdb": f"{LUKS_FORMAT} --cipher twofish-xts-plain64",
               "/dev/vdc": "cryptsetup luksFormat --batch-mode --type luks1 --hash ripemd160 "
                           "--pbkdf-force-iterations 1000 --key-file=-"}
    for dev, fmt in formats.items():
        g.check(f"printf %s '{PASS}' | {fmt} {dev} && printf %s '{PASS}' | cryptsetup open --key-file=- {dev} t && "
                "mkfs.ext4 -q /dev/mapper/t && cryptsetup close t", timeout=240)
    out = g.check(f"printf '%s\\n' '{PASS}' | rescue-assemble", timeout=240)
    opened = re.findall(r"luks +(/dev/vd[abc]) -> (/dev/mapper/luks-[0-9a-f-]+): opened read-only", out)
    assert sorted(d for d, _ in opened) == ["/dev/vda", "/dev/vdb", "/dev/vdc"], out
    for dev, mapped in opened:
        g.check(f"e2fsck -fn {mapped}", timeout=120)
    # "NAME: START LENGTH crypt CIPHER ...", one line per opened volume.
    ciphers = sorted(g.check("dmsetup table --target crypt | awk '{print $5}'").split())
    assert ciphers == ["aes-xts-plain64", "serpent-xts-plain64", "twofish-xts-plain64"], ciphers
    assert g.poweroff() == 0
    g.assert_no_fatal()


def test_efibootmgr_creates_and_deletes_a_boot_entry(guest, tmp_path):
    """Under OVMF, outside any chroot: an entry for a loader on a GPT disk's
    ESP is created, kept by the firmware over a reboot with the partition's
    GUID, start and size in its device path, reordered and deleted again."""
    disk = blank(str(tmp_path / "esp-disk.img"), "64M")
    subprocess.run(["sgdisk", "-n1:2048:+32M", "-t1:ef00", disk], check=True, capture_output=True)
    partuuid = re.search(r"Partition unique GUID: (\S+)", host(["sgdisk", "-i", "1", disk]).stdout).group(1)
    efivars = str(tmp_path / "vars.fd")
    args = ["--direct", "--firmware", "uefi", "--efivars", efivars, "--append", "console=ttyS0,115200n8",
            "--disk", f"{disk},if=virtio-blk,rw"]
    g = guest("efibootmgr", args, boot_timeout=180)
    g.wait_shell()
    before = re.search(r"^BootOrder: (\S+)$", g.check("efibootmgr"), re.M).group(1)
    out = g.check("efibootmgr -c -d /dev/vda -p 1 -L xrentry -l '\\EFI\\xr\\grubx64.efi'")
    num = re.search(r"created Boot([0-9A-F]{4})", out).group(1)
    assert re.search(rf"^BootOrder: {num},{before}$", out, re.M), out
    # The firmware's own order again, the new entry last: the next boot is as this one.
    g.check(f"efibootmgr -q -o {before},{num}")
    assert "efivarfs" not in g.check("cat /proc/mounts"), "efivarfs was left mounted"
    assert g.poweroff() == 0

    g = guest("efibootmgr-again", args, boot_timeout=180)
    g.wait_shell()
    out = g.check("efibootmgr -v")
    entry = f"Boot{num}* xrentry\tHD(1,GPT,{partuuid.lower()},0x800,0x10000)/File(\\EFI\\xr\\grubx64.efi)"
    assert entry in out.splitlines(), out
    assert re.search(rf"^BootOrder: {before},{num}$", out, re.M), out
    out = g.check(f"efibootmgr -b {num} -B")
    assert re.search(rf"^BootOrder: {before}$", out, re.M) and f"Boot{num}*" not in out, out
    status, out = g.run(f"efibootmgr -b {num} -B")
    assert status == 1 and f"efibootmgr: there is no Boot{num}" in out, out
    assert g.poweroff() == 0
    g.assert_no_fatal()
