"""extscan on crafted images (the host build with ASan/UBSan, and the image's
arm64 build), and in the booted image."""
import json
import os
import subprocess

import pytest

from disks import make_fs, sha256_file
from harness import OUT, SRC_BUILDS, host, src_program


@pytest.fixture(scope="module", params=SRC_BUILDS)
def extscan(request):
    return src_program("extscan", request.param)


def scan(extscan, *paths):
    r = host([*extscan, "--json"] + [str(p) for p in paths])
    assert r.returncode == 0 and not r.stderr, r.stderr
    return json.loads(r.stdout)


def debugfs(img, *cmds):
    for c in cmds:
        subprocess.run(["debugfs", "-w", "-R", c, str(img)], check=True, capture_output=True)


def image(tmp_path, name, fstype="ext4", options=(), size="16M"):
    img = tmp_path / f"{name}.img"
    make_fs(str(img), size, fstype=fstype, label=name[:16], options=list(options))
    return img


@pytest.mark.parametrize("fstype,options,kind", [
    ("ext2", [], "ext2"), ("ext3", [], "ext3"), ("ext3", ["-O", "extents"], "ext3+extents"),
    ("ext4", [], "ext4"), ("ext4", ["-O", "^has_journal"], "ext4"), ("ext4", ["-O", "journal_dev"], "journal"),
])
def test_kind(extscan, tmp_path, fstype, options, kind):
    v = scan(extscan, image(tmp_path, "k", fstype, options))[0]
    assert v["kind"] == kind, v
    if kind != "journal":
        assert v["kernel_mount"] == "rw" and v["e2fsck"] == "yes" and v["label"] == "k"


@pytest.mark.parametrize("cmds,state", [
    ((), "clean"),
    (("ssv state 0",), "not clean"),
    (("ssv state 3", "ssv error_count 4"), "errors recorded"),
    (("feature needs_recovery",), "journal needs recovery"),
    (("ssv last_orphan 12",), "orphans present"),
])
def test_state(extscan, tmp_path, cmds, state):
    img = image(tmp_path, "s")
    debugfs(img, *cmds)
    assert scan(extscan, img)[0]["state"] == state


def test_unknown_features(extscan, tmp_path):
    inc = image(tmp_path, "incompat")
    debugfs(inc, "ssv feature_incompat 0x80000242")
    ro = image(tmp_path, "rocompat")
    debugfs(ro, "ssv feature_ro_compat 0x40000001")
    a, b = scan(extscan, inc, ro)
    assert a["kernel_mount"] == "no" and a["kernel_blocker"] == "unknown feature 0x80000000 (incompat)", a
    assert a["e2fsck"] == "no" and a["kernel_needs_newer"] is True
    assert b["kernel_mount"] == "ro" and b["kernel_blocker"] == "unknown feature 0x40000000 (ro_compat)", b
    out = host([*extscan, str(inc)]).stdout
    # The table wraps at 80 columns.
    assert ("this medium cannot mount it (needs a newer kernel): unknown feature 0x80000000 (incompat)"
            in " ".join(out.split())), out


def test_feature_names_with_v(extscan, tmp_path):
    img = image(tmp_path, "v", options=["-O", "inline_data,casefold,project,quota"], size="32M")
    out = host([*extscan, "-v", str(img)]).stdout
    for f in ("inline_data", "casefold", "project", "quota", "metadata_csum", "extent"):
        assert f in out.split("features:")[1], out


def test_bad_input_is_reported_not_fatal(extscan, tmp_path):
    tiny = tmp_path / "tiny"
    tiny.write_bytes(b"x" * 100)
    garbage = tmp_path / "garbage"
    data = bytearray(os.urandom(8192))
    data[1024 + 0x38:1024 + 0x3a] = b"\x53\xef"
    data[1024 + 0x18:1024 + 0x1c] = b"\x40\x00\x00\x00"
    garbage.write_bytes(bytes(data))
    # One block group (4 MiB of 4 KiB blocks): no backup to fall back on.
    counts = image(tmp_path, "counts", options=["-b", "4096"], size="4M")
    with open(counts, "r+b") as f:
        f.seek(1024 + 0x10)
        f.write(b"\xff\xff\xff\xff")
    res = scan(extscan, tiny, garbage, counts, tmp_path / "missing")
    assert [("error" in v) for v in res] == [True] * 4, res
    assert "no ext2/3/4" in res[0]["error"]
    assert "absurd block size" in res[1]["error"]
    assert "absurd inode or block counts, and no valid backup" in res[2]["error"]
    assert "cannot open" in res[3]["error"]


def test_damaged_primary_uses_backup(extscan, tmp_path):
    img = image(tmp_path, "backup", size="64M")
    with open(img, "r+b") as f:
        f.seek(1024)
        f.write(b"\0" * 1024)
    v = scan(extscan, img)[0]
    assert v["backup_superblock"] == 8193 and v["label"] == "backup", v
    assert v["state"].startswith("primary superblock damaged (backup at block 8193)"), v
    assert host([*extscan, "--devices", str(img)]).stdout.strip() == f"{img}\tfs\t8193\t1024"


def test_boot_reports_and_writes_nothing(guest, tmp_path):
    """Default boot with volumes in every state: reported, and left byte-identical."""
    clean = image(tmp_path, "clean", size="32M")
    recover = image(tmp_path, "recover", size="32M")
    debugfs(recover, "feature needs_recovery")
    errors = image(tmp_path, "errors", size="32M")
    debugfs(errors, "ssv state 3", "ssv error_count 2")
    future = image(tmp_path, "future", size="32M")
    debugfs(future, "ssv feature_incompat 0x80000242")
    disks = [clean, recover, errors, future]
    before = [sha256_file(d) for d in disks]
    args = ["--direct", "--append", "console=ttyS0,115200n8"]
    for d in disks:
        args += ["--disk", f"{d},if=virtio-blk,rw"]
    g = guest("extscan-boot", args)
    g.wait_shell()
    log = g.serial_log()
    for line in ("clean", "journal needs recovery", "errors recorded"):
        assert line in log, log[-3000:]
    assert "this medium cannot mount it (needs a newer kernel): unknown feature 0x80000000" in " ".join(log.split())
    # The verdict matches what the kernel really does.
    assert g.run("mount -o ro /dev/vdd /mnt")[0] != 0
    assert "unsupported optional features (80000000)" in g.check("dmesg | grep vdd")
    assert g.poweroff() == 0
    g.assert_no_fatal()
    assert [sha256_file(d) for d in disks] == before, "the default boot wrote to a disk"


def test_partitions_mbr_and_gpt(guest, tmp_path):
    """Volumes inside MBR and GPT partitions are found under their partition names."""
    found = {}
    for table, img in (("dos", tmp_path / "mbr.img"), ("gpt", tmp_path / "gpt.img")):
        subprocess.run(["truncate", "-s", "96M", str(img)], check=True)
        # The image's own sfdisk (static) does the partitioning on the host.
        subprocess.run([os.path.join(OUT, "build", "util-linux-root", "sbin", "sfdisk"), "-q", str(img)], input=f"label: {table}\n2048,65536,L\n67584,,L\n",
                       text=True, check=True)
        for n, (start, sectors) in enumerate(((2048, 65536), (67584, 196608 - 67584 - 2048)), 1):
            subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-L", f"{table}{n}",
                            "-E", f"offset={start * 512}", str(img), f"{sectors // 2}k"], check=True)
    before = [sha256_file(str(tmp_path / n)) for n in ("mbr.img", "gpt.img")]
    g = guest("extscan-partitions", ["--direct", "--disk", f"{tmp_path / 'mbr.img'},if=virtio-blk",
                                     "--disk", f"{tmp_path / 'gpt.img'},if=ahci"])
    g.wait_shell()
    for v in json.loads(g.check("extscan --json")):
        found[v["device"]] = v.get("label")
    assert g.poweroff() == 0
    assert found == {"/dev/vda1": "dos1", "/dev/vda2": "dos2", "/dev/sda1": "gpt1", "/dev/sda2": "gpt2"}, found
    assert [sha256_file(str(tmp_path / n)) for n in ("mbr.img", "gpt.img")] == before


# Members of something else, crafted byte for byte over a valid ext4 image so
# that the ext superblock at 1024 still shows through (the trap).
UUID16 = bytes(range(0x10, 0x20))


def put(img, offset, data):
    with open(img, "r+b") as f:
        f.seek(offset)
        f.write(data)


def md1(img, minor):
    size = os.path.getsize(img)
    sector = {"1.1": 0, "1.2": 8, "1.0": ((size >> 9) - 16) & ~7}[minor]
    sb = bytearray(256)
    sb[0:4] = (0xa92b4efc).to_bytes(4, "little")
    sb[4:8] = (1).to_bytes(4, "little")
    sb[16:32] = UUID16
    sb[32:39] = b"host:r1"
    sb[72:76] = (1).to_bytes(4, "little")
    sb[92:96] = (2).to_bytes(4, "little")
    sb[144:152] = sector.to_bytes(8, "little")
    put(img, sector * 512, bytes(sb))


def md090(img, data_kib=0):
    size = os.path.getsize(img)
    words = [0xa92b4efc, 0, 90, 0, 0, 0x11111111, 0, 1, data_kib, 2, 2, 0, 0, 0x22222222, 0x33333333, 0x44444444]
    put(img, (size & ~65535) - 65536, b"".join(w.to_bytes(4, "little") for w in words))


def imsm(img):
    put(img, os.path.getsize(img) - 1024, b"Intel Raid ISM Cfg Sig. 1.3.00\0\0")


def ddf(img):
    put(img, os.path.getsize(img) - 512, bytes.fromhex("de11de11") + bytes(4) + b"LSI     " + bytes(16) + b"02.00.00")


def lvm_pv(img):
    label = bytearray(512)
    label[0:8] = b"LABELONE"
    label[8:16] = (1).to_bytes(8, "little")
    label[20:24] = (32).to_bytes(4, "little")
    label[24:32] = b"LVM2 001"
    pv = b"AbCdEf0123456789AbCdEf0123456789" + (64 << 20).to_bytes(8, "little")
    pv += (1 << 20).to_bytes(8, "little") + bytes(8) + bytes(16)          # one data area, end
    pv += (4096).to_bytes(8, "little") + ((1 << 20) - 4096).to_bytes(8, "little") + bytes(16)
    label[32:32 + len(pv)] = pv
    put(img, 512, bytes(label))
    mda = bytearray(512)
    mda[4:20] = b" LVM2 x[5A%r0N*>"
    mda[20:24] = (1).to_bytes(4, "little")
    mda[24:32] = (4096).to_bytes(8, "little")
    mda[32:40] = ((1 << 20) - 4096).to_bytes(8, "little")
    mda[40:48] = (512).to_bytes(8, "little")
    mda[48:56] = (200).to_bytes(8, "little")
    put(img, 4096, bytes(mda))
    put(img, 4096 + 512, b"xrvg {\nid = \"x\"\n")


def luks(img):
    put(img, 0, b"LUKS\xba\xbe\x00\x02")
    put(img, 168, b"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")


def bcache(img):
    magic = bytes([0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81])
    put(img, 4096 + 16, (1).to_bytes(8, "little") + magic)


def mbr(img):
    put(img, 446, bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + (63488).to_bytes(4, "little"))
    put(img, 510, b"\x55\xaa")


@pytest.mark.parametrize("make,member,what", [
    (lambda i: md1(i, "1.0"), "md member", "md RAID1 member (array 10111213:14151617:18191a1b:1c1d1e1f, 2 devices, metadata 1.0, name host:r1)"),
    (lambda i: md1(i, "1.1"), "md member", "metadata 1.1"),
    (lambda i: md1(i, "1.2"), "md member", "metadata 1.2"),
    (md090, "md member", "md RAID1 member (array 11111111:22222222:33333333:44444444, 2 devices, metadata 0.90)"),
    (lvm_pv, "LVM PV", "LVM physical volume (VG xrvg, PV AbCdEf-0123-4567-89Ab-CdEf-0123-456789)"),
    (luks, "LUKS", "LUKS2 container (UUID 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0)"),
    (bcache, "bcache", "bcache backing device"),
    (mbr, "partitioned", "disk with an MBR partition table"),
    (imsm, "md member", "Intel IMSM firmware RAID member (metadata 1.3.00)"),
    (ddf, "md member", "DDF firmware RAID member (vendor LSI, revision 02.00.00)"),
    # Whole-disk RAID1 legs of a partitioned array show its partition table:
    # the RAID metadata at the end comes first.
    (lambda i: (md1(i, "1.0"), mbr(i)), "md member", "metadata 1.0"),
    (lambda i: (md090(i, (os.path.getsize(i) & ~65535) // 1024 - 64), mbr(i)), "md member", "metadata 0.90"),
    (lambda i: (imsm(i), mbr(i)), "md member", "Intel IMSM"),
    (lambda i: (ddf(i), mbr(i)), "md member", "DDF"),
])
def test_members_are_not_volumes(extscan, tmp_path, make, member, what):
    img = image(tmp_path, "leg", size="64M", options=["-b", "4096"])
    make(str(img))
    v = scan(extscan, img)[0]
    assert v["kind"] == "member" and v["member"] == member and what in v["member_of"], v
    assert "kernel_mount" not in v and v["ext_superblock"] is True, v
    dev, verdict, reason = host([*extscan, "--devices", str(img)]).stdout.rstrip("\n").split("\t")
    assert verdict == "skip" and what in reason, reason
    assert host([*extscan, "--member", str(img)]).returncode == 0


def test_backup_superblock_needs_a_layout(extscan, tmp_path):
    """A GPT written over an old whole-disk ext4 wipes its primary superblock
    but leaves the backups: that disk is partitioned, not a damaged volume."""
    img = image(tmp_path, "oldfs", size="64M")
    put(str(img), 512, b"EFI PART" + bytes(17408 - 520))
    v = scan(extscan, img)[0]
    assert v["member"] == "partitioned" and "GPT" in v["member_of"] and not v["ext_superblock"], v
    assert host([*extscan, "--devices", str(img)]).stdout.split("\t")[1] == "skip"
    # No partition table, RAID or LVM: the backup still identifies the volume.
    plain = image(tmp_path, "plain", size="64M")
    put(str(plain), 1024, bytes(1024))
    assert scan(extscan, plain)[0]["backup_superblock"] == 8193


def test_md090_of_the_last_partition_is_not_the_disks(extscan, tmp_path):
    """The last partition of a disk may hold its 0.90 superblock where the
    whole disk's would be; the disk's partition table then reaches past the
    member's data, so the disk reads as partitioned (use the partitions)."""
    img = image(tmp_path, "lastpart", size="64M", options=["-b", "4096"])
    sectors = os.path.getsize(img) // 512 - 2048
    put(str(img), 446, bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + sectors.to_bytes(4, "little"))
    put(str(img), 510, b"\x55\xaa")
    md090(str(img), (sectors * 512 & ~65535) // 1024 - 64)
    assert scan(extscan, img)[0]["member"] == "partitioned"
    # The same superblock on a whole-disk leg: the array's table ends
    # within the array's data.
    md090(str(img), (os.path.getsize(img) & ~65535) // 1024 - 64)
    put(str(img), 446 + 12, (sectors - 4096).to_bytes(4, "little"))
    assert scan(extscan, img)[0]["member"] == "md member"


def over_old_ext(tmp_path, name, mkfs):
    img = image(tmp_path, name, size="320M", options=["-b", "4096"])
    r = host(mkfs + [str(img)])
    assert r.returncode == 0, r.stderr
    return img


@pytest.mark.parametrize("name,mkfs", [
    ("xfs", ["mkfs.xfs", "-q", "-f"]), ("btrfs", ["mkfs.btrfs", "-q", "-f"]), ("swap", ["mkswap"]),
])
def test_other_filesystem_over_old_ext_is_not_ext(extscan, tmp_path, name, mkfs):
    """mkfs.xfs, mkfs.btrfs and mkswap wipe the ext magic and leave the
    backups: a backup must not stand in where another signature claims the
    device, or a repair from it would wipe that filesystem."""
    img = over_old_ext(tmp_path, name, mkfs)
    v = scan(extscan, img)[0]
    assert v["member"] == "not ext" and v["verdict"] == "left alone", v
    assert v["member_of"] == f"another filesystem ({name}) over old ext traces (a backup superblock at block 32768)", v
    dev, verdict, reason = host([*extscan, "--devices", str(img)]).stdout.rstrip("\n").split("\t")
    assert verdict == "skip" and f"({name})" in reason, reason


def test_unknown_data_over_old_ext_is_not_ext_but_blank_primary_is(extscan, tmp_path):
    garbage = image(tmp_path, "garbage", size="64M")
    put(str(garbage), 1024, bytes(range(256)) * 4)
    v = scan(extscan, garbage)[0]
    assert v["member"] == "not ext" and "unknown data over old ext traces" in v["member_of"], v
    assert "e2fsck -b 8193 -B 1024" in v["member_of"], v
    # The ext magic with damage around it, or nothing at all: still ext.
    for name, data in (("magic", b"\xff" * 56 + b"\x53\xef" + b"\xff" * 966), ("zero", bytes(1024))):
        img = image(tmp_path, name, size="64M")
        put(str(img), 1024, data)
        assert scan(extscan, img)[0]["backup_superblock"] == 8193, name


def test_second_path_and_udev_names(guest, tmp_path):
    """One image on two virtio disks with the same serial: the second is a
    path to the first, not a volume of its own. And /dev/disk/by-id and
    by-path names resolve without udev."""
    img = image(tmp_path, "mpath", size="32M")
    g = guest("extscan-multipath", ["--direct", "--disk", f"{img},if=virtio-blk,serial=XRMP1",
                                    "--disk", f"{img},if=virtio-blk,serial=XRMP1"])
    g.wait_shell()
    volumes = {v["device"]: v for v in json.loads(g.check("extscan --json"))}
    assert volumes["/dev/vda"]["label"] == "mpath", volumes
    assert volumes["/dev/vdb"]["member"] == "multipath", volumes
    assert "second path to /dev/vda" in volumes["/dev/vdb"]["member_of"], volumes
    assert g.check("/lib/extrescue/disks/resolve /dev/disk/by-id/virtio-XRMP1").strip() == "/dev/vda"
    pci = g.check("basename $(dirname $(readlink -f /sys/class/block/vdb/device))").strip()
    assert g.check(f"/lib/extrescue/disks/resolve /dev/disk/by-path/pci-{pci}").strip() == "/dev/vdb"
    assert g.run("/lib/extrescue/disks/resolve /dev/disk/by-id/nothing-here")[0] == 1
    assert g.poweroff() == 0


def test_metrics_escape_what_the_disk_says(extscan, tmp_path):
    """--metrics: a label of quotes, backslashes and bytes that are not UTF-8
    comes out escaped, in a text promtool parses and lints; a device that
    does not read is a series of its own."""
    img = image(tmp_path, "hostile", options=["-O", "^metadata_csum"])
    with open(img, "r+b") as f:
        f.seek(1024 + 120)              # s_volume_name
        f.write(b'a"b\\c\xff\xfe}\n=x'.ljust(16, b"\0"))
    unreadable = tmp_path / "unreadable"
    unreadable.mkdir()                  # a path that opens but does not read as a disk
    r = host([*extscan, "--metrics", img, str(unreadable)])
    assert r.returncode == 0, r.stderr
    lint = host(["promtool", "check", "metrics"], input=r.stdout)
    assert lint.returncode == 0, lint.stdout + lint.stderr + r.stdout
    info = [line for line in r.stdout.splitlines() if line.startswith("extrescue_volume_info{")]
    assert len(info) == 1 and 'label="a\\"b\\\\c??}?=x"' in info[0], info
    assert f'extrescue_volume_mount_access{{device="{img}",access="rw"}} 1' in r.stdout
    assert f'extrescue_device_read_error{{device="{unreadable}"}} 1' in r.stdout, r.stdout
