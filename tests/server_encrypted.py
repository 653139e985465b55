"""The real server as Debian's installer lays out "encrypted LVM on RAID1":
two disks, each with a /boot member and a root member; /boot is ext4 on md
RAID1 with metadata 1.0 (its superblock at the end, so GRUB also sees a
plain filesystem), the root is ext4 on an LVM logical volume inside LUKS2
on md RAID1 (md1 -> md1_crypt -> VG xrsvg -> LV root), the order the
installer's guided encrypted LVM uses. GRUB sits on both disks, so the
server boots from either one alone.

The host kernel has no md or device-mapper: the layout is made in a
preparation boot of the rescue image with its own mdadm, cryptsetup and lvm,
the Debian tree comes in on a transfer disk, and the server's initramfs and
GRUB are installed with rescue-mount --rw and rescue-chroot, as a boot
repair would be done."""
import os
import shutil
import subprocess
import time

from disks import blank, make_fs
from server import BLOCK, ROOT_UUID, SFDISK, data_set, plan_damage, rescue_boot, unpack
from stacks import LUKS_FORMAT

SECRET = "xr-server-secret"
MD_BOOT_UUID = "6c2f0d1e:8a4b3c57:91e2f4a6:0b7d5c38"
MD_ROOT_UUID = "a41e7c90:3d5f2b68:c7a90e14:5f8b2d63"
LUKS_UUID = "c3a5e7f9-1b2d-4e6f-8a0c-2e4f6a8c0e1b"
BOOT_UUID = "e8b1d4f7-2a5c-4f93-b6e0-7c1d9a3f5b24"
VG = "xrsvg"
ROOT_LV = f"/dev/{VG}/root"
DISK_SIZE = "3200M"
BOOT_MIB = 256                       # each disk: /boot member from 1 MiB, the root member after it


def configure(tree):
    """The server's own view of the layout: fstab, crypttab, mdadm.conf."""
    with open(os.path.join(tree, "etc", "fstab"), "w") as f:
        f.write(f"/dev/mapper/{VG}-root / ext4 errors=remount-ro 0 1\n"
                f"UUID={BOOT_UUID} /boot ext4 defaults 0 2\n")
    with open(os.path.join(tree, "etc", "crypttab"), "w") as f:
        f.write(f"md1_crypt UUID={LUKS_UUID} none luks,discard\n")
    with open(os.path.join(tree, "etc", "mdadm", "mdadm.conf"), "w") as f:
        f.write("HOMEHOST <system>\nMAILADDR root\n"
                f"ARRAY /dev/md/0 metadata=1.0 UUID={MD_BOOT_UUID} name=xrserver:0\n"
                f"ARRAY /dev/md/1 metadata=1.2 UUID={MD_ROOT_UUID} name=xrserver:1\n")
    # Under TCG, update-initramfs with Debian's MODULES=most runs for 10
    # minutes (an exec per module); the modules this machine's root needs
    # (found from the running system; the virtio disk it boots from is named
    # in the fixture's modules file) take a fraction of that and boot the
    # same way. The fixture's own MODULES=list, read after modules-dep, is for
    # the plain servers' one disk.
    conf = os.path.join(tree, "etc", "initramfs-tools", "conf.d")
    os.unlink(os.path.join(conf, "xr-targeted"))
    with open(os.path.join(conf, "modules-dep"), "w") as f:
        f.write("MODULES=dep\n")


def build(folder, guest_factory):
    """The encrypted server's two disks in FOLDER. Returns (layout, {path:
    sha256}, seconds to build), a layout as server.build's."""
    start = time.monotonic()
    tree = unpack(folder)
    sums = data_set(tree)
    configure(tree)
    # The transfer disk: the tree in root/, what belongs on /boot in boot/.
    xfer = os.path.join(folder, "xfer")
    os.makedirs(xfer)
    shutil.move(os.path.join(tree, "boot"), os.path.join(xfer, "boot"))
    os.makedirs(os.path.join(tree, "boot"))
    shutil.move(tree, os.path.join(xfer, "root"))
    xfer_img = os.path.join(folder, "xfer.img")
    make_fs(xfer_img, "2G", label="xrxfer", populate=xfer)
    shutil.rmtree(xfer)
    disks = []
    for name in ("disk-a.img", "disk-b.img"):
        img = blank(os.path.join(folder, name), DISK_SIZE)
        subprocess.run([SFDISK, "-q", img], check=True, text=True,
                       input=f"label: dos\n2048,{BOOT_MIB * 2048},fd,*\n{(BOOT_MIB + 1) * 2048},,fd\n")
        disks.append(img)
    layout = {"disks": disks, "firmware": "bios", "vars": None, "passphrase": SECRET, "rootdev": ROOT_LV}

    g = rescue_boot(guest_factory, "server-encrypted-install", layout, disks + [xfer_img])
    g.wait_shell()
    md = "mdadm --create --run --assume-clean --homehost=xrserver --level=1 --raid-devices=2"
    mkfs = "mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0"
    g.check("mkdir -p /run/mdadm /run/lock/lvm /mnt/xfer && mount -o ro /dev/vdc /mnt/xfer")
    g.check(f"{md} /dev/md0 --metadata=1.0 --name=0 --uuid={MD_BOOT_UUID} /dev/vda1 /dev/vdb1 && "
            f"{md} /dev/md1 --metadata=1.2 --name=1 --uuid={MD_ROOT_UUID} /dev/vda2 /dev/vdb2", timeout=120)
    g.check(f"printf %s '{SECRET}' | {LUKS_FORMAT} --uuid={LUKS_UUID} /dev/md1 && "
            f"printf %s '{SECRET}' | cryptsetup open --key-file=- /dev/md1 md1_crypt && "
            f"lvm pvcreate -q /dev/mapper/md1_crypt && lvm vgcreate -q {VG} /dev/mapper/md1_crypt && "
            f"lvm lvcreate -q -l 100%FREE -n root {VG}", timeout=300)
    g.check(f"{mkfs} -U {BOOT_UUID} -L xrsboot -d /mnt/xfer/boot /dev/md0", timeout=600)
    g.check(f"{mkfs} -U {ROOT_UUID} -L xrsroot -d /mnt/xfer/root {ROOT_LV}", timeout=1800)
    g.check("umount /mnt/xfer")
    # The server's initramfs learns the crypttab and mdadm.conf; GRUB on both disks.
    g.check(f"rescue-mount --rw {ROOT_LV}", timeout=120)
    out = g.check("rescue-chroot update-initramfs -u -k all 2>&1", timeout=900)
    assert "WARNING" not in out and "rror" not in out, out
    for disk in ("/dev/vda", "/dev/vdb"):
        out = g.check(f"rescue-chroot grub-install {disk} 2>&1", timeout=600)
        assert "No error reported" in out, out
    g.check("rescue-chroot update-grub 2>&1", timeout=600)
    g.check("rescue-mount --umount && rescue-assemble --stop", timeout=120)
    assert g.poweroff("poweroff") == 0
    os.unlink(xfer_img)
    return layout, sums, time.monotonic() - start


def build_damaged(folder, guest_factory):
    """The encrypted server as build() makes it, then its root damaged by
    damage(): where both scenarios begin, so the image cache keeps it so (a
    rescue boot of 15 s a scenario). Returns (layout, {"files": {path:
    sha256}, "damaged": [paths the damage may take]}, seconds to build)."""
    start = time.monotonic()
    layout, sums, _ = build(folder, guest_factory)
    damaged = damage(guest_factory, "server-damage", layout, sums)
    return layout, {"files": sums, "damaged": sorted(damaged)}, time.monotonic() - start


def damage(guest_factory, name, layout, sums):
    """Damages the root filesystem inside LUKS as plan_damage says, from a
    rescue boot (the host cannot see through the encryption), and records
    errors in its superblock as the kernel would. Returns the paths of the
    data set the damage may take."""
    g = rescue_boot(guest_factory, name, layout, layout["disks"])
    g.wait_shell()
    g.check(f"printf '%s\\n' '{SECRET}' | rescue-assemble --rw --quiet", timeout=300)
    dblock, iblock, damaged = plan_damage(lambda c: g.check(f"debugfs -c -R '{c}' {ROOT_LV} 2>/dev/null"), sums)
    dd = f"dd of={ROOT_LV} bs={BLOCK} count=1 conv=notrunc,fsync 2>/dev/null"
    g.check(f"{dd} if=/dev/zero seek={dblock} && yes XRDAMAGE | head -c {BLOCK} | {dd} seek={iblock} && "
            f"debugfs -w -R 'ssv state 3' {ROOT_LV} 2>/dev/null && rescue-assemble --stop", timeout=120)
    assert g.poweroff() == 0
    return damaged


def stick(folder):
    """The administrator's USB stick: the LUKS key file, and room for undo files."""
    keydir = os.path.join(folder, "stick")
    os.makedirs(keydir)
    with open(os.path.join(keydir, "server.key"), "w") as f:
        f.write(SECRET)
    img = os.path.join(folder, "stick.img")
    make_fs(img, "512M", label="xrstick", populate=keydir)
    return img
