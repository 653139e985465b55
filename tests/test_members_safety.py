"""Devices that belong to something are never checked or repaired alone: the
legs of RAID1 arrays with every md metadata version (0.90 and 1.0 legs start
with a valid ext4 superblock), the partitions of whole-disk RAID1 legs whose
array holds a partition table (md 0.90 and 1.0, Intel IMSM and DDF firmware
RAID: every leg shows the array's partitions), an LVM physical volume, and
whole disks whose partition table was written over an old filesystem.
extscan names what each belongs to; an unattended repair skips them all and
every image stays byte for byte as it was."""
import json
import os
import subprocess

from disks import blank, make_fs, sha256_file
from harness import OUT, boot_with_disks, run_to_poweroff

METADATA = ["0.90", "1.0", "1.1", "1.2"]
# Whole-disk RAID1 with a partitioned array: md metadata that sits at the end.
PARTITIONED = ["1.0", "0.90"]
SFDISK = os.path.join(OUT, "build", "util-linux-root", "sbin", "sfdisk")


def put(img, offset, data):
    with open(img, "r+b") as f:
        f.seek(offset)
        f.write(data)


def firmware_raid_leg(img, tail_offset, signature):
    """A leg of a firmware RAID1 (the firmware writes its metadata, no tool of
    ours does): the array's MBR with one partition holding an ext4, then the
    metadata's signature, written as the firmware would, at the disk's end
    (the array, and so its partition, ends before the metadata)."""
    blank(img, "40M")
    subprocess.run([SFDISK, "-q", img], input="label: dos\n2048,61440,L\n", text=True, check=True)
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-L", "xrfw", "-E", "offset=1048576", img, "30M"], check=True)
    put(img, os.path.getsize(img) - tail_offset, signature)


def test_members_are_skipped_and_untouched(guest, tmp_path):
    legs = []
    for m in METADATA:
        for side in "ab":
            legs.append(blank(str(tmp_path / f"r{m}{side}.img"), "40M"))
    plegs = []
    for m in PARTITIONED:
        for side in "ab":
            plegs.append(blank(str(tmp_path / f"p{m}{side}.img"), "40M"))
    fw = []
    for kind, offset, sig in (("imsm", 1024, b"Intel Raid ISM Cfg Sig. 1.3.00\0\0"),
                              ("ddf", 512, bytes.fromhex("de11de11") + bytes(4) + b"LSI     " + bytes(16) + b"02.00.00")):
        for side in "ab":
            fw.append(str(tmp_path / f"{kind}{side}.img"))
            firmware_raid_leg(fw[-1], offset, sig)
    pv = blank(str(tmp_path / "pv.img"), "32M")
    # A whole-disk ext4 with an MBR put in front of it, and one under a GPT.
    mbr = str(tmp_path / "mbr.img")
    make_fs(mbr, "32M", label="xrmbr")
    put(mbr, 446, bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + (63488).to_bytes(4, "little"))
    put(mbr, 510, b"\x55\xaa")
    gpt = str(tmp_path / "gpt.img")
    make_fs(gpt, "64M", label="xrgpt")
    put(gpt, 512, b"EFI PART" + bytes(17408 - 520))
    disks = legs + [pv, mbr, gpt] + plegs + fw
    vd = {d: "/dev/vd" + "abcdefghijklmnopqrstuvwxyz"[i] for i, d in enumerate(disks)}

    g = boot_with_disks(guest, "members-prepare", disks, mem=768)
    g.check("mkdir -p /run/mdadm /run/lock/lvm")
    for i, m in enumerate(METADATA):
        a, b = f"/dev/vd{chr(ord('a') + 2 * i)}", f"/dev/vd{chr(ord('a') + 2 * i + 1)}"
        g.check(f"mdadm --create --run --assume-clean --metadata={m} /dev/md{10 + i} --level=1 "
                f"--raid-devices=2 {a} {b} && mkfs.ext4 -q -L xrmd{i} /dev/md{10 + i}", timeout=120)
    g.check("lvm pvcreate -q /dev/vdi && lvm vgcreate -q xrmvg /dev/vdi && lvm lvcreate -q -L 12M -n lv xrmvg "
            "&& mkfs.ext4 -q /dev/xrmvg/lv && lvm vgchange -q -an xrmvg", timeout=120)
    for i, m in enumerate(PARTITIONED):
        md = f"/dev/md{20 + i}"
        g.check(f"mdadm --create --run --assume-clean --metadata={m} {md} --level=1 --raid-devices=2 "
                f"{vd[plegs[2 * i]]} {vd[plegs[2 * i + 1]]} && echo '2048,,L' | sfdisk -q {md} && "
                f"mkfs.ext4 -q -L xrpart{i} {md}p1", timeout=120)
    g.check("mdadm --stop --scan")
    # The console also carries hotplug-watch's lines (the arrays' partitions
    # going as they stop): only extscan's own lines are its JSON.
    doc = [line for line in g.check("extscan --json").splitlines() if line in ("[", "]") or line.startswith("  {")]
    volumes = {v["device"]: v for v in json.loads("\n".join(doc))}
    assert g.poweroff() == 0

    for i, m in enumerate(METADATA):
        for leg in (f"/dev/vd{chr(ord('a') + 2 * i)}", f"/dev/vd{chr(ord('a') + 2 * i + 1)}"):
            v = volumes.get(leg)
            assert v and v["member"] == "md member" and f"metadata {m}" in v["member_of"], (leg, v)
            assert "RAID1" in v["member_of"] and v["verdict"].startswith("assemble first"), v
    assert volumes["/dev/vdi"]["member"] == "LVM PV" and "VG xrmvg" in volumes["/dev/vdi"]["member_of"]
    assert volumes["/dev/vdj"]["member"] == "partitioned", volumes.get("/dev/vdj")
    assert "/dev/vdk" not in volumes, "a GPT disk's old backup superblock counted as a volume"

    before = {d: sha256_file(d) for d in disks}
    log = run_to_poweroff(guest, "members-repair", disks, "rescue.fsck=repair rescue.undo=none", mem=768)
    assert "rescue-fsck repair: summary" in log, log[-3000:]
    for n in range(8):
        dev = f"/dev/vd{chr(ord('a') + n)}"
        assert f"{dev}: skipped: md RAID1 member" in log, (dev, log[-3000:])
    assert "/dev/vdi: skipped: LVM physical volume (VG xrmvg" in log, log[-3000:]
    assert "/dev/vdj: skipped: disk with an MBR partition table (partitions vdj1): use its partitions" in log, log[-3000:]
    for i, m in enumerate(PARTITIONED):
        for leg in plegs[2 * i:2 * i + 2]:
            assert f"{vd[leg]}: skipped: md RAID1 member" in log and f"metadata {m}" in log, (leg, log[-3000:])
            assert f"{vd[leg]}1: skipped: partition 1 of {vd[leg][5:]}: md RAID1 member" in log, (leg, log[-3000:])
    for leg, what in zip(fw, ["Intel IMSM"] * 2 + ["DDF"] * 2):
        assert f"{vd[leg]}: skipped: {what} firmware RAID member" in log, (leg, log[-3000:])
        assert f"{vd[leg]}1: skipped: partition 1 of {vd[leg][5:]}: {what} firmware RAID member" in log, (leg, log[-3000:])
    changed = [d for d in disks if sha256_file(d) != before[d]]
    assert not changed, f"the repair wrote to members: {changed}"
