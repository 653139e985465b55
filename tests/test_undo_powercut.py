"""The way back survives a power cut: an unattended repair with its undo file
on a disk of its own (ext4 or FAT), QEMU killed at moments of the repair's
own timeline (two spread over it, as an uncut run of the same repair timed
it, and three as its writes reach the volume), with page-cache writeback as
eager as on a busy machine. From the host afterwards every volume is either
untouched or given back, byte for byte outside the fields of its primary
superblock e2undo marks, by the image's e2undo with the undo file found on
the undo disk. Each cut is a row of the printed table. Killing QEMU loses
what the guest had not written to its disks; a disk's own write cache is
not modelled (QEMU's writes are in the host's page cache)."""
import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import time

import pexpect
import pytest

from disks import make_fs
from harness import OUT, host, scaled

E2UNDO = os.path.join(OUT, "build", "e2fsprogs-root", "sbin", "e2undo")
CUTS = 5                    # per damage shape and undo filesystem: 20 in all
EAGER = "sysctl.vm.dirty_expire_centisecs=50 sysctl.vm.dirty_writeback_centisecs=20"
BLOCK = 4096
# What e2undo may change in the primary superblock after a cut (its mark and
# the flush that writes it): s_wtime, s_state, s_kbytes_written, s_wtime_hi,
# s_checksum, as (offset in the volume, length).
MARKED = ((1024 + 0x30, 4), (1024 + 0x3A, 2), (1024 + 0x178, 8), (1024 + 0x274, 1), (1024 + 0x3FC, 4))
UNDO_DIR = "extrescue-undo"
DIRS = 240


def copy(src, dst):
    subprocess.run(["cp", "--sparse=always", src, dst], check=True)


def populate(root):
    """24,000 small files in 240 directories, their contents known."""
    for d in range(DIRS):
        sub = os.path.join(root, f"d{d:03d}")
        os.makedirs(sub)
        for i in range(100):
            with open(os.path.join(sub, f"f{i:02d}"), "wb") as f:
                f.write(hashlib.sha256(f"{d}/{i}".encode()).digest() * (8 + (d * 100 + i) * 37 % 120))


def dumpe2fs(img):
    return host(["dumpe2fs", img]).stdout


def overwrite(img, block, count, data):
    with open(img, "r+b") as f:
        f.seek(block * BLOCK)
        f.write(data[:count * BLOCK])


def inode_tables(img):
    """Noise over 384 of the files' inodes (group 0's inode table from its
    fifth block): pass 1 clears them, pass 2 their names, pass 4 and 5 fix
    the counts."""
    first = int(re.search(r"Inode table at (\d+)", dumpe2fs(img)).group(1))
    overwrite(img, first + 4, 24, random.Random(35).randbytes(24 * BLOCK))


def directories_and_bitmaps(img):
    """Twelve directories' first blocks filled with noise, and group 0's
    bitmaps zeroed: pass 2 rebuilds the directories, pass 3 links the
    orphaned files in lost+found, pass 5 rewrites the bitmaps."""
    rnd = random.Random(35)
    for d in range(0, DIRS, DIRS // 12):
        blk = int(host(["debugfs", "-R", f"bmap /d{d:03d} 0", img]).stdout.strip())
        overwrite(img, blk, 1, rnd.randbytes(BLOCK))
    out = dumpe2fs(img)
    for what in ("Block bitmap", "Inode bitmap"):
        overwrite(img, int(re.search(rf"{what} at (\d+)", out).group(1)), 1, bytes(BLOCK))


SHAPES = {"inode tables": inode_tables, "directories and bitmaps": directories_and_bitmaps}


def damaged_original(tmp_path, name, damage):
    """TMP_PATH/original.img: 256 MiB of the 24,000 files, DAMAGE done to it
    (a function of the image), e2fsck -fn seeing it."""
    src = tmp_path / "tree"
    populate(str(src))
    original = str(tmp_path / "original.img")
    make_fs(original, "256M", label="xrcut", populate=str(src), options=["-b", str(BLOCK), "-N", "32768"])
    damage(original)
    assert host(["e2fsck", "-fn", original]).returncode & 4, f"{name}: the damage is not there"
    return original


def undo_disk(path, fs):
    """A blank undo disk labelled XRUNDO."""
    if os.path.exists(path):
        os.unlink(path)
    if fs == "ext4":
        make_fs(path, "96M", label="XRUNDO")
    else:
        subprocess.run(["truncate", "-s", "96M", path], check=True)
        subprocess.run(["mkfs.fat", "-F", "32", "-n", "XRUNDO", path], check=True, capture_output=True)


def undo_files(disk, fs, into):
    """The undo files on a copy of DISK as the next boot would see them (an
    ext4's journal replayed first), copied into INTO; [] when none."""
    replica = str(into / "undo-disk.img")
    copy(disk, replica)
    if fs == "ext4":
        r = host(["e2fsck", "-E", "journal_only", "-y", replica])
        assert r.returncode in (0, 1), f"replaying the undo disk's journal: {r.stdout}{r.stderr}"
        listing = host(["debugfs", "-R", f"ls -p /{UNDO_DIR}", replica]).stdout
        names = [f.split("/")[5] for f in listing.splitlines() if f.count("/") >= 6]
        names = [n for n in names if n.endswith(".e2undo")]
        for n in names:
            subprocess.run(["debugfs", "-R", f"dump /{UNDO_DIR}/{n} {into / n}", replica],
                           check=True, capture_output=True)
    else:
        r = host(["mdir", "-b", "-i", replica, f"::/{UNDO_DIR}"])
        assert r.returncode == 0 or "not found" in r.stderr, f"listing the FAT undo disk: {r.stderr}"
        names = [os.path.basename(p) for p in r.stdout.split() if p.endswith(".e2undo")]
        for n in names:
            subprocess.run(["mcopy", "-n", "-i", replica, f"::/{UNDO_DIR}/{n}", str(into / n)],
                           check=True, capture_output=True)
    os.unlink(replica)
    return [str(into / n) for n in sorted(names)]


def masked(block0):
    b = bytearray(block0)
    for off, n in MARKED:
        b[off:off + n] = bytes(n)
    return bytes(b)


def blocks_differing(a, b, mark_allowed=False):
    """4 KiB blocks that differ between images A and B (with MARK_ALLOWED,
    not counting what e2undo's mark changes in the first). A MiB at a time,
    counted block by block only where it differs: a whole comparison block
    by block took about 0.4 s of CPU, and a test makes a dozen."""
    n = 0
    chunk = 256 * BLOCK
    with open(a, "rb") as fa, open(b, "rb") as fb:
        first = True
        while True:
            # Two statements, not one: with both reads in one, four 1 MiB
            # buffers were alive at once and the allocator gave pages back
            # and faulted in fresh ones on every pass (1.0 s of CPU against
            # 0.07 s for two 256 MiB images).
            x = fa.read(chunk)
            y = fb.read(chunk)
            if not x and not y:
                return n
            if first and mark_allowed:
                x, y = masked(x[:BLOCK]) + x[BLOCK:], masked(y[:BLOCK]) + y[BLOCK:]
            first = False
            if x != y:
                n += sum(x[i:i + BLOCK] != y[i:i + BLOCK] for i in range(0, max(len(x), len(y)), BLOCK))


def repair(guest, name, target, undo, cut=None):
    """An unattended repair of TARGET with its undo files on UNDO.
    Without CUT: runs it to the end; returns the seconds from its first
    write (to either disk) to its end and to the volume's first change.
    CUT ("repair", S) kills QEMU S seconds after the repair's first write,
    ("volume", S) S seconds after the volume first changed; returns when it
    was cut (seconds after the first write), or "end" if the repair ended
    first (QEMU is killed then, as it shuts down)."""
    params = (f"console=ttyS0,115200n8 {EAGER} rescue.fsck=repair rescue.devices=vda "
              f"rescue.undo=LABEL=XRUNDO rescue.after=poweroff")
    args = ["--direct", "--mem", "512", "--append", params,
            "--disk", f"{target},if=virtio-blk,rw", "--disk", f"{undo},if=virtio-blk,rw"]
    g = guest(name, args, boot_timeout=300)
    deadline = time.monotonic() + scaled(300)
    started = first = volume = None
    log = b""

    def kill():
        os.kill(g.child.pid, signal.SIGKILL)
        g.child.expect(pexpect.EOF, timeout=scaled(30))
    while time.monotonic() < deadline:
        g.drain()
        log = g.serial_log_grown(log)
        now = time.monotonic()
        if started is None and b"== e2fsck" in log:
            started = {p: os.stat(p).st_mtime_ns for p in (target, undo)}
        if started:
            changed = [p for p, t in started.items() if os.stat(p).st_mtime_ns != t]
            first = first or (now if changed else None)
            volume = volume or (now if target in changed else None)
        base = {"repair": first, "volume": volume}[cut[0]] if cut else None
        if base is not None and now - base >= cut[1]:
            kill()
            return f"{now - first:.2f} s"
        if b"rescue-fsck repair: summary" in log:
            assert first is not None and volume is not None, f"{name}: the repair wrote nothing: {log[-2000:]}"
            if cut:
                kill()
                return "end"
            g.child.expect(pexpect.EOF, timeout=scaled(60))
            log = g.serial_log_grown(log).decode(errors="replace")
            assert "errors corrected" in log.split("rescue-fsck repair: summary")[1], log[-2000:]
            return now - first, volume - first
        if not g.child.isalive():
            break
        time.sleep(0.01)
    raise AssertionError(f"{name}: the repair did not end (or did not start) in time; "
                         f"its console's last lines:\n{g.serial_log()[-3000:]}")


def outcome(tmp_path, target, original, undo, undo_fs):
    """What a cut left: 'untouched', 'given back' (by e2undo, with the
    options it needed) or what went wrong; with the blocks the cut changed
    and the undo file's size."""
    changed = blocks_differing(target, original)
    found = tmp_path / "found"
    shutil.rmtree(found, ignore_errors=True)
    found.mkdir()
    files = undo_files(undo, undo_fs, found)
    size = os.path.getsize(files[-1]) if files else None
    if changed == 0:
        return "untouched", changed, size
    if not files:
        return "LOST: no undo file", changed, size
    for opts in ([], ["-f"]):
        trial = str(tmp_path / "trial.img")
        copy(target, trial)
        for f in reversed(files):          # a retry's second file first
            r = host([E2UNDO, *opts, f, trial])
            if r.returncode:
                break
        left = blocks_differing(trial, original, mark_allowed=True)
        if r.returncode == 0 and not left:
            return f"given back ({' '.join(['e2undo', *opts])})", changed, size
    why = (r.stdout + r.stderr).strip().splitlines()
    return f"LOST: {left} blocks still differ ({why[-1] if why else 'e2undo said nothing'})", changed, size


@pytest.mark.parametrize("undo_fs", ["ext4", "vfat"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_power_cut_during_a_repair_keeps_the_way_back(guest, tmp_path, shape, undo_fs):
    original = damaged_original(tmp_path, shape, SHAPES[shape])
    target, undo = str(tmp_path / "target.img"), str(tmp_path / "undo.img")
    tag = f"cut-{shape.split()[0]}-{undo_fs}"

    # The uncut repair: its timeline, and its undo file gives everything back.
    copy(original, target)
    undo_disk(undo, undo_fs)
    span, volume_at = repair(guest, f"{tag}-whole", target, undo)
    rows = [("not cut", f"end ({span:.2f} s)", *outcome(tmp_path, target, original, undo, undo_fs))]

    # Two cuts spread over the repair, three as its writes reach the volume
    # (where undo records not yet on stable storage would show).
    cuts = [("repair", span * 0.25), ("repair", span * 0.6),
            ("volume", 0), ("volume", 0.05), ("volume", (span - volume_at) * 0.4)]
    assert len(cuts) == CUTS
    for k, cut in enumerate(cuts):
        copy(original, target)
        undo_disk(undo, undo_fs)
        at = repair(guest, f"{tag}-{k}", target, undo, cut)
        rows.append((f"{cut[0]} +{cut[1]:.2f} s", at, *outcome(tmp_path, target, original, undo, undo_fs)))
        if rows[-1][2].startswith("LOST"):
            # The volume and undo disk as the cut left them, for a look
            # (the folder of a failed test stays; the next cut would overwrite them).
            keep = tmp_path / f"lost-{k}"
            keep.mkdir()
            for img in (target, undo):
                copy(img, str(keep / os.path.basename(img)))

    print(f"\n{shape}, undo files on {undo_fs} (first write to the volume at {volume_at:.2f} s):")
    print(f"  {'planned':>16} | {'cut at':>8} | {'blocks changed':>14} | {'undo file':>14} | outcome")
    for plan, at, what, changed, size in rows:
        print(f"  {plan:>16} | {at:>8} | {changed:14d} | {'none' if size is None else f'{size} bytes':>14} | {what}")
    lost = [r for r in rows if r[2].startswith("LOST")]
    assert not lost, f"{len(lost)} of {len(rows)} cuts lost the way back: {lost}; their disks are in {tmp_path}/lost-*"
    assert any(changed for _, at, _, changed, _ in rows[1:] if at != "end"), \
        "no cut came after the repair's first write to the volume: the test proved nothing"
