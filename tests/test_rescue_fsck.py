"""Unattended check and repair from the kernel command line, with undo."""
import shutil
import subprocess

from disks import cat, fsck_clean, make_fs, sha256_file, tree
from harness import host, run_to_poweroff


def damaged(tmp_path, name):
    """An ext4 image with known files, then the inode of one of them cleared."""
    src = tmp_path / f"{name}-tree"
    src.mkdir()
    tree(str(src), files=12)
    img = str(tmp_path / f"{name}.img")
    make_fs(img, "32M", label=name, populate=str(src), options=["-b", "4096"])
    subprocess.run(["debugfs", "-w", "-R", "clri /dir1/file005", img], check=True, capture_output=True)
    assert host(["e2fsck", "-fn", img]).returncode == 4
    return img


def test_check_reports_and_writes_nothing(guest, tmp_path):
    bad = damaged(tmp_path, "bad")
    good = str(tmp_path / "good.img")
    make_fs(good, "32M", label="good")
    before = [sha256_file(bad), sha256_file(good)]
    log = run_to_poweroff(guest, "fsck-check", [bad, good], "rescue.fsck=check")
    assert "rescue-fsck check: summary" in log, log[-2000:]
    assert "/dev/vda         4      errors found (not fixed: read-only check)" in log, log[-2000:]
    assert "/dev/vdb         0      clean" in log, log[-2000:]
    assert [sha256_file(bad), sha256_file(good)] == before, "a read-only check wrote to a disk"


def test_repair_with_undo_on_a_named_disk(guest, tmp_path):
    bad = damaged(tmp_path, "bad")
    original = str(tmp_path / "bad.orig")
    shutil.copy(bad, original)
    undo_disk = str(tmp_path / "undo.img")
    make_fs(undo_disk, "64M", label="undo")
    log = run_to_poweroff(guest, "fsck-repair", [bad, undo_disk],
                          "rescue.fsck=repair rescue.devices=vda rescue.undo=LABEL=undo")
    assert "errors corrected" in log and "e2undo /run/undo-disk/extrescue-undo/vda.e2undo" in log, log[-2000:]
    fsck_clean(bad)
    # Files outside the damage survive; the cleared one is gone (or in lost+found).
    assert cat(bad, "/dir0/file000") and cat(bad, "/dir2/file002")
    undo = tmp_path / "vda.e2undo"
    subprocess.run(["debugfs", "-R", f"dump /extrescue-undo/vda.e2undo {undo}", undo_disk],
                   check=True, capture_output=True)
    r = host(["e2undo", str(undo), bad])
    assert r.returncode == 0, r.stdout + r.stderr
    assert sha256_file(bad) == sha256_file(original), "e2undo did not restore the damaged original"
