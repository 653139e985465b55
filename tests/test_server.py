"""The whole job on a real Debian 12 server (tests/server.py): it is broken
and shown not to boot (tests/server_breaks.py; the image cache keeps the
broken disks as that boot left them, so a run with the entry in the cache
starts at the repair), repaired with extrescue as an administrator would,
and shown to boot again with its data intact. Seconds of each boot and
repair are printed (pytest -s shows them)."""
import time

import pytest

from disks import make_fs, sha256_file
from server import boot_server, build, build_crashed, build_once, copy_layout, debugfs_r, figures, install_grub, \
    login, read_files, rescue_boot, unattended_repair
from server_breaks import broken_server

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The plain BIOS server's disks, built once for the module: the base of its broken servers and a data set's sums."""
    return build_once(tmp_path_factory, "bios", lambda f, g: build(f, g, "bios"))


@pytest.fixture(scope="module")
def crashed_server(tmp_path_factory, server):
    """The plain BIOS server cut off mid-write (server.build_crashed)."""
    return build_once(tmp_path_factory, "bios crashed mid-write", lambda f, g: build_crashed(f, g, server[0]))


@pytest.fixture(scope="module")
def uefi_server(tmp_path_factory):
    """The plain UEFI server (GPT, ESP, ext4 root, its own variable store)."""
    return build_once(tmp_path_factory, "uefi", lambda f, g: build(f, g, "uefi"))


# The broken servers (tests/server_breaks.py's BROKEN says how each is made).
@pytest.fixture(scope="module")
def damaged_server(tmp_path_factory, server):
    return broken_server(tmp_path_factory, "damaged_server", *server)


@pytest.fixture(scope="module")
def bios_loader_gone(tmp_path_factory, server):
    return broken_server(tmp_path_factory, "bios_loader_gone", *server)


@pytest.fixture(scope="module")
def uefi_loader_gone(tmp_path_factory, uefi_server):
    # The server booted from its own boot entry when it was built (server.build).
    return broken_server(tmp_path_factory, "uefi_loader_gone", *uefi_server)


@pytest.fixture(scope="module")
def legacy_fstab_server(tmp_path_factory, server):
    return broken_server(tmp_path_factory, "legacy_fstab_server", *server)


def test_damaged_root_repaired_unattended(guest, server, damaged_server, tmp_path):
    sums = server[1]
    base, broke = damaged_server
    lay = copy_layout(str(tmp_path), "s1", base)
    root, srv = lay["root"], lay["srv"]
    undo = str(tmp_path / "undo.img")
    make_fs(undo, "512M", label="xrundo")
    log, repair = unattended_repair(guest, "s1-repair", lay, [root, srv, undo],
                                    "rescue.fsck=repair rescue.devices=vda1 rescue.undo=LABEL=xrundo "
                                    "rescue.after=poweroff")
    assert "/dev/vda1" in log.split("rescue-fsck repair: summary")[1] and "errors corrected" in log, log[-3000:]
    assert "lost+found now holds" in log, log[-3000:]
    g, good = boot_server(guest, "s1-fixed", lay)
    g.kill()
    figures("damaged root", broke["failing seconds"], repair, good)
    files = read_files(root, [p for p in sums if p.startswith("/home/") and p not in broke["damaged"]])
    wrong = [p for p, s in files.items() if s != sums[p]]
    assert not wrong, f"files outside the damage changed: {wrong[:5]}"


def test_boot_loader_gone_reinstalled_by_hand(guest, bios_loader_gone, tmp_path):
    reinstall(guest, bios_loader_gone, str(tmp_path), "s2")


def test_uefi_boot_loader_gone_reinstalled_by_hand(guest, uefi_loader_gone, tmp_path):
    reinstall(guest, uefi_loader_gone, str(tmp_path), "s2u")


def reinstall(guest, broken_server, folder, name):
    """The server does not boot (its boot loader gone); grub-install and
    update-grub from rescue-chroot, by hand; it boots."""
    base, broke = broken_server
    lay = copy_layout(folder, name, base)
    g = rescue_boot(guest, f"{name}-repair", lay, [lay["root"], lay["srv"]])
    g.wait_shell()
    t = time.monotonic()
    install_grub(g, lay)
    assert g.poweroff("poweroff") == 0
    repair = time.monotonic() - t
    g, good = boot_server(guest, f"{name}-fixed", lay)
    g.kill()
    figures(f"boot loader gone ({lay['firmware']})", broke["failing seconds"], repair, good)


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


def test_legacy_fstab_rewritten(guest, legacy_fstab_server, tmp_path):
    base, broke = legacy_fstab_server
    lay = copy_layout(str(tmp_path), "s4", base)
    root = lay["root"]
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
    figures("legacy fstab", broke["failing seconds"], repair, good)
