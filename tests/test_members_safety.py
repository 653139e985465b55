"""Devices that belong to something are never checked or repaired alone: the
legs of RAID1 arrays with every md metadata version (0.90 and 1.0 legs start
with a valid ext4 superblock), an LVM physical volume, and whole disks whose
partition table was written over an old filesystem. extscan names what each
belongs to; an unattended repair skips them all and every image stays byte
for byte as it was."""
import json

from disks import blank, make_fs, sha256_file
from harness import boot_with_disks, run_to_poweroff

METADATA = ["0.90", "1.0", "1.1", "1.2"]


def put(img, offset, data):
    with open(img, "r+b") as f:
        f.seek(offset)
        f.write(data)


def test_members_are_skipped_and_untouched(guest, tmp_path):
    legs = []
    for m in METADATA:
        for side in "ab":
            legs.append(blank(str(tmp_path / f"r{m}{side}.img"), "40M"))
    pv = blank(str(tmp_path / "pv.img"), "32M")
    # A whole-disk ext4 with an MBR put in front of it, and one under a GPT.
    mbr = str(tmp_path / "mbr.img")
    make_fs(mbr, "32M", label="xrmbr")
    put(mbr, 446, bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + (63488).to_bytes(4, "little"))
    put(mbr, 510, b"\x55\xaa")
    gpt = str(tmp_path / "gpt.img")
    make_fs(gpt, "64M", label="xrgpt")
    put(gpt, 512, b"EFI PART" + bytes(17408 - 520))
    disks = legs + [pv, mbr, gpt]

    g = boot_with_disks(guest, "members-prepare", disks, mem=768)
    g.check("mkdir -p /run/mdadm /run/lock/lvm")
    for i, m in enumerate(METADATA):
        a, b = f"/dev/vd{chr(ord('a') + 2 * i)}", f"/dev/vd{chr(ord('a') + 2 * i + 1)}"
        g.check(f"mdadm --create --run --assume-clean --metadata={m} /dev/md{10 + i} --level=1 "
                f"--raid-devices=2 {a} {b} && mkfs.ext4 -q -L xrmd{i} /dev/md{10 + i}", timeout=120)
    g.check("lvm pvcreate -q /dev/vdi && lvm vgcreate -q xrmvg /dev/vdi && lvm lvcreate -q -L 12M -n lv xrmvg "
            "&& mkfs.ext4 -q /dev/xrmvg/lv && lvm vgchange -q -an xrmvg", timeout=120)
    g.check("mdadm --stop --scan")
    volumes = {v["device"]: v for v in json.loads(g.check("extscan --json"))}
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
    changed = [d for d in disks if sha256_file(d) != before[d]]
    assert not changed, f"the repair wrote to members: {changed}"
