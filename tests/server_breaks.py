"""How each real-server scenario breaks its server, and the boot that shows
the server no longer comes up. The broken disks, as that failing boot left
them, are an image cache entry of their own (tests/image_cache.py): the same
inputs break the same bytes and stop the same boot at the same place, so a
run with the entry in the cache starts at the repair, and a change to any
input (these breaks, the server's build, the image, QEMU) breaks and boots
it again."""
import collections
import os
import subprocess
import time

from server import BLOCK, GARBLE, PART_START, SRV_UUID, boot_server, build_once, copy_layout, debugfs_r, \
    debugfs_w, plan_damage, rescue_boot


def build_broken(folder, guest_factory, base, base_data, name, breaks, timeout=600):
    """Server layout BASE copied into FOLDER, broken by BREAKS(layout,
    guest_factory, folder, BASE_DATA) (which returns what the scenario needs
    to know, a dict), then booted from its own disks: the boot must stop
    short of the login prompt (server.boot_server). Returns (layout, that
    dict with the failing boot's "failing seconds" and "stuck" where it
    stopped, seconds to build)."""
    start = time.monotonic()
    layout = copy_layout(folder, name, base)
    data = breaks(layout, guest_factory, folder, base_data) or {}
    g, failing = boot_server(guest_factory, f"{name}-broken", layout, expect_login=False, timeout=timeout)
    g.kill()
    data.update({"failing seconds": failing, "stuck": g.stuck})
    return layout, data, time.monotonic() - start


def damage_root(layout, guest_factory, folder, sums):
    """A directory block zeroed and an inode table block garbled
    (server.plan_damage; SUMS: the base's data set), errors recorded as the
    kernel records them when it meets such damage, so the server's
    initramfs runs a full check at boot (and gives up on it). The data:
    {"damaged": the paths the damage may take}."""
    root = layout["root"]
    dblock, iblock, damaged = plan_damage(lambda c: debugfs_r(root, c), sums)
    with open(root, "r+b") as f:
        f.seek(PART_START + dblock * BLOCK)
        f.write(bytes(BLOCK))
        f.seek(PART_START + iblock * BLOCK)
        f.write(GARBLE)
    debugfs_w(root, "ssv state 3")
    return {"damaged": sorted(damaged)}


def wipe_bios_boot_loader(layout, guest_factory, folder, base_data):
    """The MBR's boot code and GRUB's core image after it, zeroed."""
    with open(layout["root"], "r+b") as f:
        f.write(bytes(446))
        f.seek(512)
        f.write(bytes((1 << 20) - 512))


def remove_uefi_boot_loader(layout, guest_factory, folder, base_data):
    """\\EFI\\debian deleted from the ESP (from the host), and the server's
    Boot#### variables removed (from a rescue boot, with efibootmgr in
    rescue-chroot: the variable store is the firmware's)."""
    r = subprocess.run(["mdeltree", "-i", f"{layout['root']}@@1M", "::/EFI/debian"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    g = rescue_boot(guest_factory, "server-uefi-unentered", layout, [layout["root"], layout["srv"]])
    g.wait_shell()
    g.check(f"rescue-mount --rw {layout['rootdev']} && for b in $(rescue-chroot efibootmgr | "
            "awk '/^Boot[0-9A-F]+\\* debian/ {print substr($1, 5, 4)}'); do rescue-chroot efibootmgr -q -B -b $b; "
            "done && ! rescue-chroot efibootmgr | grep -q debian && rescue-mount --umount")
    assert g.poweroff("poweroff") == 0


LEGACY_FSTAB = (f"UUID=7d3f0a52-9c41-4d6e-b2a8-5e1f3c9d0b71 / ext4 errors=remount-ro 0 1\n"
                f"UUID={SRV_UUID} /srv ext4dev defaults,extents,mballoc,delalloc 0 2\n")


def legacy_fstab(layout, guest_factory, folder, base_data):
    """The fstab of a server from the days of the ext4dev patches: /srv as
    ext4dev, with the options that were mount options then."""
    path = os.path.join(folder, "fstab")
    with open(path, "w") as f:
        f.write(LEGACY_FSTAB)
    debugfs_w(layout["root"], "rm /etc/fstab", f"write {path} /etc/fstab")
    os.unlink(path)


def nothing_more(layout, guest_factory, folder, base_data):
    """The base as it is (the encrypted server's entry is damaged already)."""


def second_disk_gone(layout, guest_factory, folder, base_data):
    """The encrypted server's second disk gone: its copy deleted, the server
    booted from the first alone."""
    for d in layout["disks"][1:]:
        os.unlink(d)
    layout["disks"] = layout["disks"][:1]


# Each broken server: the test fixture that gives it, its name in the image
# cache, the fixture of the server it is made from, the name its guests and
# copies take, the break, and the seconds its failing boot may take (a disk
# with no boot loader shows nothing, or the firmware's own message, at once).
Broken = collections.namedtuple("Broken", "cache_name base slug breaks timeout")
BROKEN = {
    "damaged_server": Broken("bios damaged root", "server", "s1", damage_root, 600),
    "bios_loader_gone": Broken("bios boot loader gone", "server", "s2", wipe_bios_boot_loader, 60),
    "uefi_loader_gone": Broken("uefi boot loader gone", "uefi_server", "s2u", remove_uefi_boot_loader, 60),
    "legacy_fstab_server": Broken("bios legacy fstab", "server", "s4", legacy_fstab, 600),
    "encrypted_unbootable": Broken("encrypted LVM on RAID1 unbootable", "encrypted_server", "s1e", nothing_more, 600),
    "mirror_leg_gone": Broken("encrypted LVM on RAID1 second disk gone", "encrypted_server", "s5", second_disk_gone,
                              600),
}


def broken_server(tmp_path_factory, fixture, base, base_data):
    """The broken server of test fixture FIXTURE (BROKEN), made from server
    layout BASE (with BASE_DATA, what its builder kept): (layout, data as
    build_broken returns them), from the image cache."""
    b = BROKEN[fixture]
    return build_once(tmp_path_factory, b.cache_name,
                      lambda f, g: build_broken(f, g, base, base_data, b.slug, b.breaks, b.timeout))
