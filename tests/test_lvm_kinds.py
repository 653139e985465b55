"""Volumes beyond the plain kinds, as servers have them: an LVM thin pool
with a thin volume, dm-cache and dm-writecache volumes, RAID1 and RAID5
volumes (dm-raid), an old-style mirror (dm-mirror), and a partitioned disk
seen over two paths (multipath) with ext4 on one partition and LVM on the
other. Made in a preparation boot of the image, then opened by
rescue-assemble read-only: every volume's ext4 checks clean and its files
read back, the single paths are never offered, and no byte of any member
disk changes, not even on --stop."""
import re
import subprocess

from disks import blank, sha256_file

MEMBERS = ["pva", "pvb", "pvc", "pvd"]
VOLUMES = ["thin", "cached", "wcached", "r1", "r5", "mir"]
MPATH_WWN = "0x5000c500a1b2c3d4"
MPATH = "/dev/mapper/mpath-naa.5000c500a1b2c3d4"


def fill(g, dev, label):
    """ext4 on DEV with a copy of the image's licence texts and their sums."""
    g.check(f"mkfs.ext4 -q -L {label} {dev} && mount {dev} /mnt && "
            f"cp -a /usr/share/licenses /mnt/ && (cd /mnt && find licenses -type f | sort | "
            f"xargs sha256sum > /mnt/SUMS) && umount /mnt", timeout=120)


def verify(g, dev):
    g.check(f"e2fsck -fn {dev}", timeout=120)
    g.check(f"mount -o ro {dev} /mnt && (cd /mnt && sha256sum -c -s SUMS) && umount /mnt", timeout=120)


def make_volumes(guest, images, mpath):
    """The LVM kinds on vda-vdd; on vde (the multipath disk, partitioned on
    the host) ext4 in partition 1 and a volume group in partition 2."""
    args = ["--direct", "--mem", "768"]
    for img in images + [mpath]:
        args += ["--disk", f"{img},if=virtio-blk,rw"]
    g = guest("lvm-kinds-prepare", args)
    g.wait_shell()
    g.check("mkdir -p /run/lock/lvm && lvm pvcreate -q /dev/vda /dev/vdb /dev/vdc /dev/vdd && "
            "lvm vgcreate -q xr /dev/vda /dev/vdb /dev/vdc /dev/vdd")
    steps = [
        "lvcreate -q --type thin-pool -L 40M -n pool xr /dev/vda",
        "lvcreate -q -V 48M -T xr/pool -n thin",
        "lvcreate -q -L 24M -n cached xr /dev/vdb",
        "lvcreate -q --type cache-pool -L 12M -n cpool xr /dev/vdc",
        "lvconvert -q -y --type cache --cachepool xr/cpool xr/cached",
        "lvcreate -q -L 24M -n wcached xr /dev/vdb",
        "lvcreate -q -an -L 12M -n wc xr /dev/vdc",
        "lvconvert -q -y --type writecache --cachevol xr/wc xr/wcached",
        "lvcreate -q --type raid1 -m1 -L 16M -n r1 xr /dev/vdc /dev/vdd",
        "lvcreate -q --type raid5 -i2 -L 24M -n r5 xr /dev/vdb /dev/vdc /dev/vdd",
        "lvcreate -q --type mirror -m1 --mirrorlog core -L 12M -n mir xr /dev/vda /dev/vdd",
    ]
    for step in steps:
        g.check(f"lvm {step}", timeout=120)
    segtypes = dict(line.split() for line in g.check("lvm lvs --noheadings -o lv_name,segtype xr").splitlines())
    assert [segtypes[v] for v in VOLUMES] == ["thin", "cache", "writecache", "raid1", "raid5", "mirror"], segtypes
    # Let the new RAID volumes and the mirror finish their initial sync.
    g.check("while lvm lvs --noheadings -o sync_percent xr/r1 xr/r5 xr/mir | grep -v -q 100.00; do sleep 1; done",
            timeout=180)
    for v in VOLUMES:
        fill(g, f"/dev/xr/{v}", f"xr{v}")
    fill(g, "/dev/vde1", "xrmp1")
    g.check("lvm pvcreate -q /dev/vde2 && lvm vgcreate -q xrmp /dev/vde2 && lvm lvcreate -q -l 100%FREE -n data xrmp")
    fill(g, "/dev/xrmp/data", "xrmpdata")
    g.check("lvm vgchange -an && sync", timeout=120)
    assert g.poweroff() == 0


def test_lvm_kinds_and_multipath_open_read_only(guest, tmp_path):
    images = [blank(str(tmp_path / f"{m}.img"), "128M") for m in MEMBERS]
    mpath = blank(str(tmp_path / "mpath.img"), "64M")
    subprocess.run(["sgdisk", "-n1:2048:+24M", "-n2:0:0", "-t2:8e00", mpath], check=True, capture_output=True)
    make_volumes(guest, images, mpath)
    before = {img: sha256_file(img) for img in images + [mpath]}

    args = ["--direct", "--mem", "768"]
    for img in images:
        args += ["--disk", f"{img},if=virtio-blk,rw"]
    # The same disk twice, writable, with one serial and WWN, behind two SCSI
    # controllers: two paths (sda, sdb), as a SAN gives them.
    args.append("--")
    for n in range(2):
        args += ["-drive", f"if=none,id=path{n},format=raw,file={mpath},file.locking=off",
                 "-device", f"virtio-scsi-pci,id=hba{n}",
                 "-device", f"scsi-hd,drive=path{n},bus=hba{n}.0,serial=XRMPATH01,wwn={MPATH_WWN}"]
    g = guest("lvm-kinds", args)
    g.wait_shell()
    out = g.check("rescue-assemble --quiet", timeout=240)
    assert re.search(rf"^\s+mpath\s+{MPATH} from sda sdb: 2 paths to one disk, read-only$", out, re.M), out
    for n in (1, 2):
        assert re.search(rf"^\s+mpath\s+{MPATH}-part{n}: partition {n} of {MPATH}$", out, re.M), out
    for v in VOLUMES:
        assert re.search(rf"^\s+lvm\s+/dev/xr/{v} \(\S+\): active read-only$", out, re.M), (v, out)
    assert re.search(r"^\s+lvm\s+/dev/xrmp/data \(\S+\): active read-only$", out, re.M), out
    assert re.search(r"/dev/xr/pool: thin-pool metadata not checked \(thin_check is not in this image\)", out), out
    assert re.search(r"^\s+lvm\s+/dev/xr/pool \(\S+\): thin pool, active read-only$", out, re.M), out
    for dev in [f"/dev/xr/{v}" for v in VOLUMES] + ["/dev/xrmp/data", f"{MPATH}-part1"]:
        assert g.check(f"blockdev --getro {dev}").strip() == "1", dev
        verify(g, dev)
    # LVM took its physical volume from the multipath mapping, not a path.
    assert g.check("dmsetup deps -o devname xrmp-data").strip().endswith(f"({MPATH[12:]}-part2)")
    # extscan offers the mapping's partition, and neither path's.
    devices = g.check("extscan --devices")
    assert re.search(rf"^{MPATH}-part1\tfs", devices, re.M), devices
    for path in ("sda1", "sdb1", "sda2", "sdb2"):
        assert re.search(rf"^/dev/{path}\tskip", devices, re.M), devices
    assert not re.search(r"^/dev/sd\w+\tfs", devices, re.M), devices
    # The kernel kept them read-only: the thin pool in read-only mode, no
    # write reached a member, a write to a RAID volume is refused.
    status = g.check("dmsetup status")
    assert re.search(r"^xr-pool-tpool: .* thin-pool .* ro ", status, re.M), status
    dmesg = g.check("dmesg")
    assert "write to read-only block-device" not in dmesg, dmesg
    status, out = g.run("dd if=/dev/zero of=/dev/xr/r1 bs=4k count=1 conv=notrunc")
    assert status != 0, out
    g.check("rescue-assemble --stop", timeout=120)
    assert "dm-" not in g.check("ls /sys/class/block")
    dmesg = g.check("dmesg")
    assert "write to read-only block-device" not in dmesg, dmesg
    assert g.poweroff() == 0
    g.assert_no_fatal()

    changed = [img for img in images + [mpath] if sha256_file(img) != before[img]]
    assert not changed, f"members written: {changed}"
