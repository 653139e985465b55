"""The whole job on a real Debian 12 server (tests/server.py): it is broken,
shown not to boot, repaired with extrescue as an administrator would, and
shown to boot again with its data intact. Seconds of each boot and repair are
printed (pytest -s shows them)."""
import subprocess
import time

import pytest

from disks import make_fs, sha256_file
from server import (BLOCK, GARBLE, PART_START, SRV_UUID, boot_server, build, build_crashed, build_once, copy_layout,
                    debugfs_r, debugfs_w, figures, install_grub, login, plan_damage, read_files, rescue_boot,
                    unattended_repair)

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The plain BIOS server's disks, built once for the module; every scenario copies them."""
    return build_once(tmp_path_factory, "bios", lambda f, g: build(f, g, "bios"))


@pytest.fixture(scope="module")
def crashed_server(tmp_path_factory, server):
    """The plain BIOS server cut off mid-write (server.build_crashed)."""
    return build_once(tmp_path_factory, "bios crashed mid-write", lambda f, g: build_crashed(f, g, server[0]))


@pytest.fixture(scope="module")
def uefi_server(tmp_path_factory):
    """The plain UEFI server (GPT, ESP, ext4 root, its own variable store)."""
    return build_once(tmp_path_factory, "uefi", lambda f, g: build(f, g, "uefi"))


def test_damaged_root_repaired_unattended(guest, server, tmp_path):
    base, sums = server
    lay = copy_layout(str(tmp_path), "s1", base)
    root, srv = lay["root"], lay["srv"]
    dblock, iblock, damaged = plan_damage(lambda c: debugfs_r(root, c), sums)
    with open(root, "r+b") as f:
        f.seek(PART_START + dblock * BLOCK)
        f.write(bytes(BLOCK))
        f.seek(PART_START + iblock * BLOCK)
        f.write(GARBLE)
    # As the kernel does when it meets such damage: errors recorded, so the
    # server's initramfs runs a full check at boot (and gives up on it).
    debugfs_w(root, "ssv state 3")

    g, failing = boot_server(guest, "s1-broken", lay, expect_login=False)
    g.kill()
    undo = str(tmp_path / "undo.img")
    make_fs(undo, "512M", label="xrundo")
    log, repair = unattended_repair(guest, "s1-repair", lay, [root, srv, undo],
                                    "rescue.fsck=repair rescue.devices=vda1 rescue.undo=LABEL=xrundo "
                                    "rescue.after=poweroff")
    assert "/dev/vda1" in log.split("rescue-fsck repair: summary")[1] and "errors corrected" in log, log[-3000:]
    assert "lost+found now holds" in log, log[-3000:]
    g, good = boot_server(guest, "s1-fixed", lay)
    g.kill()
    figures("damaged root", failing, repair, good)
    files = read_files(root, [p for p in sums if p.startswith("/home/") and p not in damaged])
    wrong = [p for p, s in files.items() if s != sums[p]]
    assert not wrong, f"files outside the damage changed: {wrong[:5]}"


def test_boot_loader_gone_reinstalled_by_hand(guest, server, tmp_path):
    lay = copy_layout(str(tmp_path), "s2", server[0])
    with open(lay["root"], "r+b") as f:     # boot code of the MBR and GRUB's core image after it
        f.write(bytes(446))
        f.seek(512)
        f.write(bytes((1 << 20) - 512))
    reinstall(guest, lay, "s2")


def test_uefi_boot_loader_gone_reinstalled_by_hand(guest, uefi_server, tmp_path):
    # The server booted from its own boot entry when it was built (server.build).
    lay = copy_layout(str(tmp_path), "s2u", uefi_server[0])
    # \EFI\debian deleted from the ESP, its Boot#### variable removed.
    r = subprocess.run(["mdeltree", "-i", f"{lay['root']}@@1M", "::/EFI/debian"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    g = rescue_boot(guest, "s2u-break", lay, [lay["root"], lay["srv"]])
    g.wait_shell()
    g.check(f"rescue-mount --rw {lay['rootdev']} && for b in $(rescue-chroot efibootmgr | "
            "awk '/^Boot[0-9A-F]+\\* debian/ {print substr($1, 5, 4)}'); do rescue-chroot efibootmgr -q -B -b $b; "
            "done && ! rescue-chroot efibootmgr | grep -q debian && rescue-mount --umount")
    assert g.poweroff("poweroff") == 0
    reinstall(guest, lay, "s2u")


def reinstall(guest, lay, name):
    """The server does not boot; grub-install and update-grub from
    rescue-chroot, by hand; it boots."""
    g, failing = boot_server(guest, f"{name}-broken", lay, expect_login=False, timeout=60)
    g.kill()
    g = rescue_boot(guest, f"{name}-repair", lay, [lay["root"], lay["srv"]])
    g.wait_shell()
    t = time.monotonic()
    install_grub(g, lay)
    assert g.poweroff("poweroff") == 0
    repair = time.monotonic() - t
    g, good = boot_server(guest, f"{name}-fixed", lay)
    g.kill()
    figures(f"boot loader gone ({lay['firmware']})", failing, repair, good)


def test_crashed_mid_write_looked_at_read_only(guest, crashed_server, tmp_path):
    # The server wrote /root/crash-file, synced, and lost its power (server.build_crashed).
    lay = copy_layout(str(tmp_path), "s3", crashed_server[0])
    root, srv = lay["root"], lay["srv"]
    assert "needs_recovery" in debugfs_r(root, "features")
    before = [sha256_file(root), sha256_file(srv)]
    g = rescue_boot(guest, "s3-look", lay, [root, srv])
    g.wait_shell()
    t = time.monotonic()
    out = g.check("rescue-mount /dev/vda1", timeout=120)
    assert "journal replayed in RAM" in out, out
    assert g.check("cat /mnt/root/root/crash-file").strip() == "synced-before-the-crash"
    g.check("rescue-mount --umount")
    out = g.check("rescue-fsck check /dev/vda1", timeout=600)
    assert "/dev/vda1        0      clean (journal replayed in RAM)" in out, out
    assert g.poweroff() == 0
    look = time.monotonic() - t
    assert [sha256_file(root), sha256_file(srv)] == before, "the read-only look wrote to the server's disks"
    g, good = boot_server(guest, "s3-after", lay)
    login(g)
    assert g.check("cat /root/crash-file").strip() == "synced-before-the-crash"
    g.kill()
    figures("crashed mid-write", crashed_server[1]["boot seconds"], look, good)


def test_legacy_fstab_rewritten(guest, server, tmp_path):
    lay = copy_layout(str(tmp_path), "s4", server[0])
    root = lay["root"]
    legacy = (f"UUID=7d3f0a52-9c41-4d6e-b2a8-5e1f3c9d0b71 / ext4 errors=remount-ro 0 1\n"
              f"UUID={SRV_UUID} /srv ext4dev defaults,extents,mballoc,delalloc 0 2\n")
    fstab = tmp_path / "fstab"
    fstab.write_text(legacy)
    debugfs_w(root, "rm /etc/fstab", f"write {fstab} /etc/fstab")
    g, failing = boot_server(guest, "s4-broken", lay, expect_login=False)
    g.kill()
    g = rescue_boot(guest, "s4-repair", lay, [root, lay["srv"]])
    g.wait_shell()
    t = time.monotonic()
    out = g.check("rescue-mount --rw /dev/vda1", timeout=120)
    assert "/srv" in out and "mounted rw" in out.split("/srv")[1].splitlines()[0], out
    out = g.check("rescue-fstab")
    assert "line 2: /srv: type ext4dev -> ext4; options extents, mballoc dropped" in out, out
    out = g.check("rescue-fstab --write")
    assert "rewritten; the old one is /mnt/root/etc/fstab.extrescue-" in out, out
    assert g.check("grep /srv /mnt/root/etc/fstab").split()[2:4] == ["ext4", "defaults,delalloc"]
    g.check("rescue-mount --umount")
    assert g.poweroff("poweroff") == 0
    repair = time.monotonic() - t
    g, good = boot_server(guest, "s4-fixed", lay)
    login(g)
    assert "/srv" in g.check("findmnt -n -o TARGET /srv")
    g.kill()
    figures("legacy fstab", failing, repair, good)
