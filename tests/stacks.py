"""md RAID, LVM and LUKS test volumes, made in a preparation boot of the image
itself (the build hosts have no md or device-mapper): every layout the
assemble tests and the assemble benchmark use, each holding a known tree."""
import os

from disks import blank, make_fs, tree
from harness import Guest

PASS = "xr-correct-horse"
LUKS_UUID = "5e1f7a3c-0b6d-4c2e-9a8f-3d2b1c0e9f47"   # of the plain LUKS2 volume, for crypttab tests
R5_UUID = "3f1c9a27:5b8e4d60:a2c7e913:0d4b6f85"       # of the RAID5 array, for mdadm.conf tests
# Small argon2 costs: TCG is slow and the guest has little memory.
LUKS_FORMAT = ("cryptsetup luksFormat --batch-mode --type luks2 --pbkdf argon2id --pbkdf-memory 32768 "
               "--pbkdf-force-iterations 4 --pbkdf-parallel 1 --key-file=-")
# name -> size; the order is the virtio order (vda, vdb, ...), the source tree last.
MEMBERS = {
    "r1a": "40M", "r1b": "40M",                    # ext4 on md RAID1
    "r5a": "32M", "r5b": "32M", "r5c": "32M",      # ext4 on md RAID5
    "lv": "48M",                                   # ext4 on an LVM logical volume
    "luks": "56M",                                 # ext4 inside LUKS2
    "s1": "72M", "s2": "72M",                      # ext4 in LUKS on LVM on RAID1
    "cl": "80M",                                   # damaged ext4 in LVM in LUKS
    "pva": "32M", "pvb": "32M",                    # a volume group over two disks
}
NAMES = list(MEMBERS)


# Prints the device (dm-N) of the ext4 inside LUKS on LVM on RAID1, once assembled.
STACK_LUKS_DEV = ("for d in /sys/class/block/dm-*; do [ $(cat $d/dm/name) = stackvg-crypt ] && "
                  "basename $d/holders/*; done; true")


def dev(name):
    return "/dev/vd" + chr(ord("a") + NAMES.index(name))


def fill(g, target):
    """mkfs.ext4 on TARGET and copy the known tree (on the last disk) into it."""
    g.check(f"mkfs.ext4 -q -F -L xr{os.path.basename(target)} {target} && mount {target} /mnt/t && "
            f"cp -a /mnt/src/. /mnt/t/ && umount /mnt/t", timeout=120)


def prepare(folder):
    """Member images in FOLDER made by the image's own mdadm, lvm and cryptsetup."""
    src_tree = folder / "tree"
    sums = tree(str(src_tree), files=24)
    src = str(folder / "src.img")
    make_fs(src, "16M", label="xrsrc", populate=str(src_tree))
    images = {}
    for name, size in MEMBERS.items():
        images[name] = str(folder / f"{name}.img")
        blank(images[name], size)
    args = ["--direct", "--mem", "768"]
    for img in list(images.values()) + [src]:
        args += ["--disk", f"{img},if=virtio-blk,rw"]
    g = Guest("assemble-prepare", args).start()
    try:
        g.wait_shell()
        src_dev = "/dev/vd" + chr(ord("a") + len(NAMES))
        g.check(f"mkdir -p /mnt/src /mnt/t && mount -o ro {src_dev} /mnt/src && mkdir -p /run/mdadm /run/lock/lvm")
        md = "mdadm --create --run --assume-clean --metadata=1.2"
        g.check(f"{md} /dev/md/r1 --name=r1 --level=1 --raid-devices=2 {dev('r1a')} {dev('r1b')}")
        fill(g, "/dev/md/r1")
        g.check(f"{md} /dev/md/r5 --name=r5 --uuid={R5_UUID} --level=5 --raid-devices=3 {dev('r5a')} {dev('r5b')} {dev('r5c')}")
        fill(g, "/dev/md/r5")
        g.check(f"lvm pvcreate -q {dev('lv')} && lvm vgcreate -q xrvg {dev('lv')} && "
                f"lvm lvcreate -q -l 100%FREE -n data xrvg")
        fill(g, "/dev/xrvg/data")
        g.check(f"printf %s '{PASS}' | {LUKS_FORMAT} --uuid={LUKS_UUID} {dev('luks')} && "
                f"printf %s '{PASS}' | cryptsetup open --key-file=- {dev('luks')} xrluks", timeout=180)
        fill(g, "/dev/mapper/xrluks")
        # The usual stack: LUKS on LVM on RAID1.
        g.check(f"{md} /dev/md/stack --name=stack --level=1 --raid-devices=2 {dev('s1')} {dev('s2')} && "
                f"lvm pvcreate -q /dev/md/stack && lvm vgcreate -q stackvg /dev/md/stack && "
                f"lvm lvcreate -q -l 100%FREE -n crypt stackvg")
        g.check(f"printf %s '{PASS}' | {LUKS_FORMAT} /dev/stackvg/crypt && "
                f"printf %s '{PASS}' | cryptsetup open --key-file=- /dev/stackvg/crypt xrstack", timeout=180)
        fill(g, "/dev/mapper/xrstack")
        # LVM inside LUKS, its ext4 damaged for the read-write repair.
        g.check(f"printf %s '{PASS}' | {LUKS_FORMAT} {dev('cl')} && "
                f"printf %s '{PASS}' | cryptsetup open --key-file=- {dev('cl')} xrcl && "
                f"lvm pvcreate -q /dev/mapper/xrcl && lvm vgcreate -q cryptvg /dev/mapper/xrcl && "
                f"lvm lvcreate -q -l 100%FREE -n root cryptvg", timeout=180)
        fill(g, "/dev/cryptvg/root")
        # A directory's inode cleared: e2fsck must drop the dangling entry.
        g.check("debugfs -w -R 'clri /dir1' /dev/cryptvg/root")
        g.check(f"lvm pvcreate -q {dev('pva')} {dev('pvb')} && lvm vgcreate -q splitvg {dev('pva')} {dev('pvb')} && "
                f"lvm lvcreate -q -l 100%FREE -n wide splitvg")
        fill(g, "/dev/splitvg/wide")
        g.check("cryptsetup close xrstack && cryptsetup close xrluks && lvm vgchange -an && "
                "cryptsetup close xrcl && mdadm --stop --scan && sync")
        assert "dm-" not in g.check("ls /sys/class/block") and "md" not in g.check("ls /sys/block")
        g.poweroff()
    finally:
        g.kill()
    return {"images": images, "src": src, "sums": sums, "folder": folder}
