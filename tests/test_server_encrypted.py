"""The whole job on the installer's "encrypted LVM on RAID1" server
(tests/server_encrypted.py): its root damaged, shown not to boot
(tests/server_breaks.py; kept in the image cache as that boot left it),
repaired with extrescue, booting again; once with both disks, unattended
with a key file, once with the second disk gone, by hand and degraded."""
import hashlib
import re
import time

import pytest

from harness import host
from server import boot_server, build_once, copy_layout, figures, login, rescue_boot, unattended_repair
from server_breaks import broken_server
from server_encrypted import BOOT_MIB, ROOT_LV, SECRET, VG, build_damaged, stick

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def encrypted_server(tmp_path_factory):
    """The encrypted server's two disks, its root damaged (server_encrypted.build_damaged),
    built once for the module: (layout, its data set's sums, the paths the damage may take)."""
    layout, made = build_once(tmp_path_factory, "encrypted LVM on RAID1", build_damaged)
    return layout, made["files"], set(made["damaged"])


# The broken servers (tests/server_breaks.py's BROKEN says how each is made).
@pytest.fixture(scope="module")
def encrypted_unbootable(tmp_path_factory, encrypted_server):
    return broken_server(tmp_path_factory, "encrypted_unbootable", *encrypted_server[:2])


@pytest.fixture(scope="module")
def mirror_leg_gone(tmp_path_factory, encrypted_server):
    return broken_server(tmp_path_factory, "mirror_leg_gone", *encrypted_server[:2])


def data_intact(g, sums, damaged):
    """The data set, read by the booted server itself (the host cannot see
    through LUKS): every file outside the damage matches."""
    out = g.check("find /home/admin/docs /srv/data -type f | sort | xargs sha256sum", timeout=300)
    seen = {path: digest for digest, path in (line.split() for line in out.splitlines() if line.strip())}
    wrong = [p for p in sums if p not in damaged and seen.get(p) != sums[p]]
    assert not wrong, f"files outside the damage changed or went missing: {wrong[:5]}"


def test_encrypted_root_repaired_unattended(guest, encrypted_server, encrypted_unbootable, tmp_path):
    _, sums, damaged = encrypted_server
    base, broke = encrypted_unbootable
    lay = copy_layout(str(tmp_path), "s1e", base)
    usb = stick(str(tmp_path))
    log, repair = unattended_repair(guest, "s1e-repair", lay, lay["disks"] + [usb],
                                    "rescue.assemble=rw rescue.keyfile=LABEL=xrstick:/server.key rescue.fsck=repair "
                                    "rescue.devices=LABEL=xrsroot rescue.undo=LABEL=xrstick rescue.after=poweroff")
    assert re.search(r"luks +/dev/md\d+ -> /dev/mapper/luks-\S+: opened read-write", log), log[-3000:]
    summary = log.split("rescue-fsck repair: summary")[1]
    assert f"/dev/mapper/{VG}-root" in summary and "errors corrected" in summary, log[-3000:]
    assert "lost+found now holds" in log, log[-3000:]
    # The undo file is on the stick, under a name of its own.
    r = host(["debugfs", "-R", "ls -l /extrescue-undo", usb]).stdout
    assert ".e2undo" in r, r
    g, good = boot_server(guest, "s1e-fixed", lay)
    login(g)
    data_intact(g, sums, damaged)
    g.kill()
    figures("damaged encrypted root", broke["failing seconds"], repair, good)


def test_mirror_leg_missing_repaired_degraded(guest, encrypted_server, mirror_leg_gone, tmp_path):
    _, sums, damaged = encrypted_server
    base, broke = mirror_leg_gone
    lay = copy_layout(str(tmp_path), "s5", base)      # the first disk alone
    disk = lay["disks"][0]
    boot_data = member_data_sum(disk)
    usb = stick(str(tmp_path))
    g = rescue_boot(guest, "s5-repair", lay, [disk, usb])
    g.wait_shell()
    t = time.monotonic()
    assemble = f"printf '%s\\n' '{SECRET}' | rescue-assemble --degraded"
    # A look first: both arrays start degraded, read-only, nothing resynced.
    status, out = g.run(assemble, timeout=300)
    assert status == 0, out
    started = re.findall(r"md +(/dev/md\S+) raid1 from (vda\d): started \S+, DEGRADED \(1 of 2 members\)", out)
    assert len(started) == 2, out
    boot_md = dict((m, d) for d, m in started)["vda1"]
    # Read-write: the root's chain, and /boot's array so that it too records
    # the lost disk (Debian's initramfs starts a degraded array only while
    # the root is missing: an array recorded whole stays down and the boot
    # stops waiting for /boot).
    status, out = g.run(f"{assemble} --rw={VG}/root,{boot_md}", timeout=300)
    assert status == 0, out
    assert len(re.findall(r"md +/dev/md\S+: read-write", out)) == 2, out
    mdstat = g.check("cat /proc/mdstat")
    assert "resync" not in mdstat and "recovery" not in mdstat, mdstat
    g.check("mkdir -p /mnt/stick && mount /dev/vdb /mnt/stick && mkdir -p /mnt/stick/extrescue-undo")
    status, out = g.run(f"rescue-fsck repair --undo-dir /mnt/stick/extrescue-undo {ROOT_LV}", timeout=900)
    assert status == 1 and "errors corrected" in out, out
    g.check("umount /mnt/stick && rescue-assemble --stop", timeout=120)
    assert g.poweroff("poweroff") == 0
    repair = time.monotonic() - t
    assert member_data_sum(disk) == boot_data, "/boot's array was written to or resynced"
    g, good = boot_server(guest, "s5-fixed", lay)
    login(g)
    assert re.search(r"\[2/1\] \[U_\]", g.check("cat /proc/mdstat")), "the server did not boot degraded"
    data_intact(g, sums, damaged)
    g.kill()
    figures("mirror leg missing", broke["failing seconds"], repair, good)


def member_data_sum(disk):
    """sha256 of the data area of DISK's /boot member (the first partition,
    less the md 1.0 superblock in its last 64 KiB)."""
    with open(disk, "rb") as f:
        f.seek(1 << 20)
        return hashlib.sha256(f.read((BOOT_MIB << 20) - (64 << 10))).hexdigest()
