"""A real Debian 12 server on disk images, for the end-to-end suite: the
cached debootstrap tree (tests/server/build-fixture) laid out as an installer
would (MBR, one ext4 root; /srv on a disk of its own), GRUB installed from a
preparation boot of the rescue image (rescue-mount --rw, rescue-chroot
grub-install, update-grub), a known data set under /home and /srv whose
checksums stay outside the images, and helpers to boot the server, damage it
from the host and check it afterwards."""
import contextlib
import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import time

import image_cache
from disks import make_fs
from harness import OUT, TOP, GuestError, Guests, host, scaled

FIXTURE = os.path.join(TOP, "tests", "server", "build-fixture")
SFDISK = os.path.join(OUT, "build", "util-linux-root", "sbin", "sfdisk")
ROOT_UUID = "7d3f0a52-9c41-4d6e-b2a8-5e1f3c9d0b71"
SRV_UUID = "2b8e6c14-0f3a-4b95-8d27-c6a1e9f40d58"
PART_START = 1 << 20                 # the root partition starts at 1 MiB
ROOT_SIZE = "3G"
PASSWORD = "extrescue"
# What the server shows when it booted, and when it stopped on the way.
LOGIN = r"xrserver login:"
STUCK = [r"\(initramfs\)", r"emergency mode", r"UNEXPECTED INCONSISTENCY", r"Give root password",
         r"Boot failed", r"No bootable device", r"Press Enter for maintenance", r"Shell> ",
         r"BdsDxe: No bootable option"]


def data_set(base):
    """The known files under BASE/home/admin and BASE/srv/data; returns {path: sha256}."""
    sums = {}
    for top, count in (("home/admin/docs", 240), ("srv/data", 120)):
        for i in range(count):
            rel = f"{top}/d{i % 12:02d}/file{i:03d}"
            path = os.path.join(base, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            data = hashlib.sha256(f"{rel}".encode()).digest() * (8 + (i * 131) % 700)
            with open(path, "wb") as f:
                f.write(data)
            sums["/" + rel] = hashlib.sha256(data).hexdigest()
    return sums


@contextlib.contextmanager
def partition(img, offset=PART_START):
    """The filesystem at OFFSET of IMG as a host loop device (the host makes no
    partition devices for loop devices)."""
    dev = subprocess.run(["losetup", "-f", "--show", "-o", str(offset), img],
                         check=True, capture_output=True, text=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=True)


def inode_numbers(debugfs, dirs):
    """{path: inode number} of the files in DIRS; DEBUGFS runs one read-only
    debugfs request on the root filesystem and returns its output."""
    out = {}
    for d in dirs:
        for line in debugfs(f"ls -p {d}").splitlines():
            f = line.split("/")
            if len(f) > 6 and f[1] != "0" and f[5] not in (".", ".."):
                out[f"{d}/{f[5]}"] = int(f[1])
    return out


BLOCK = 4096
# What an inode table block is overwritten with: the same on the host and in
# a guest (`yes XRDAMAGE | head -c 4096`).
GARBLE = (b"XRDAMAGE\n" * (BLOCK // 9 + 1))[:BLOCK]


def plan_damage(debugfs, sums):
    """Which blocks of the root filesystem to damage, as a disk failure would:
    a directory block of /home/admin/docs/d03 (zeroed) and the inode table
    block under d05's file005 (garbled). Returns (directory block, inode
    table block, the data set's paths the damage may take: d03's names and
    every file, or directory with what is in it, whose inode shared the block)."""
    docs = [f"/home/admin/docs/d{i:02d}" for i in range(12)]
    inodes = inode_numbers(debugfs, docs + ["/home/admin/docs"])
    dblock = int(debugfs("blocks /home/admin/docs/d03").split()[0])
    ino = inodes["/home/admin/docs/d05/file005"]
    where = debugfs(f"imap <{ino}>")
    iblock = int(where.split("located at block")[1].split(",")[0])
    first = ino - int(where.split("offset")[1].split()[0], 16) // 256
    damaged = {p for p in sums if p.startswith("/home/admin/docs/d03/")}
    lost = [p for p, n in inodes.items() if first <= n < first + BLOCK // 256]
    damaged |= {p for p in sums if any(p == q or p.startswith(q + "/") for q in lost)}
    return dblock, iblock, damaged


def read_files(img, paths, offset=PART_START):
    """{path: sha256 or None} of PATHS in the filesystem of IMG (None: unreadable)."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="xr-server.") as tmp, partition(img, offset) as dev:
        for p in paths:
            dest = os.path.join(tmp, "f")
            if os.path.exists(dest):
                os.unlink(dest)
            # -c: a server stopped at its login prompt left bitmaps to its journal.
            subprocess.run(["debugfs", "-c", "-R", f"dump {p} {dest}", dev], capture_output=True)
            if os.path.exists(dest):
                with open(dest, "rb") as f:
                    out[p] = hashlib.sha256(f.read()).hexdigest()
            else:
                out[p] = None
    return out


def debugfs_w(img, *cmds, offset=PART_START):
    with partition(img, offset) as dev:
        for c in cmds:
            r = subprocess.run(["debugfs", "-w", "-R", c, dev], capture_output=True, text=True)
            assert r.returncode == 0, f"debugfs {c}: {r.stderr}"


def debugfs_r(img, cmd, offset=PART_START):
    with partition(img, offset) as dev:
        return subprocess.run(["debugfs", "-c", "-R", cmd, dev], capture_output=True, text=True).stdout


ESP_ID = "1234-ABCD"                 # the ESP's FAT volume id, for its fstab line
UEFI_ROOT_START = 65 << 20           # UEFI: ESP from 1 MiB, root from 65 MiB


def fstab(firmware):
    lines = f"UUID={ROOT_UUID} / ext4 errors=remount-ro 0 1\n"
    if firmware == "uefi":
        lines += f"UUID={ESP_ID} /boot/efi vfat umask=0077 0 1\n"
    return lines + f"UUID={SRV_UUID} /srv ext4 defaults 0 2\n"


def fixture_tarball():
    """The cached Debian tree's tarball (built by tests/server/build-fixture on first use)."""
    r = host([FIXTURE])
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[-1]


def unpack(folder):
    """The cached Debian tree unpacked in FOLDER/tree; returns its path."""
    tarball = fixture_tarball()
    tree = os.path.join(folder, "tree")
    os.makedirs(tree)
    # Our own tarball, owners, modes and device nodes as debootstrap made
    # them: trusted as it is (Python 3.12+ would filter it by default).
    trusted = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
    with tarfile.open(tarball) as t:
        t.extractall(tree, numeric_owner=True, **trusted)
    return tree


def build(folder, guest_factory, firmware="bios"):
    """The server in FOLDER: root.img (BIOS: MBR and one ext4 root; UEFI: GPT,
    ESP and ext4 root, with OVMF's variable store in vars.fd) and srv.img
    (ext3 with extents, the original patch series' format, as /srv).
    Returns (layout, {path: sha256}, seconds to build); a layout is a dict
    of disks (the images, in boot order), root, srv, offset (of the root
    filesystem), firmware, vars, rootdev."""
    start = time.monotonic()
    tree = unpack(folder)
    sums = data_set(tree)
    srv_tree = os.path.join(folder, "srv-tree")
    shutil.move(os.path.join(tree, "srv", "data"), os.path.join(srv_tree, "data"))
    with open(os.path.join(tree, "etc", "fstab"), "w") as f:
        f.write(fstab(firmware))
    root = os.path.join(folder, "root.img")
    subprocess.run(["truncate", "-s", ROOT_SIZE, root], check=True)
    size = os.path.getsize(root)
    layout = {"root": root, "firmware": firmware, "vars": None}
    if firmware == "bios":
        offset = PART_START
        sectors = (size - offset) // 512
        # An MBR with one bootable Linux partition from 1 MiB to the end.
        with open(root, "r+b") as f:
            f.seek(446)
            f.write(bytes([0x80, 0, 0, 0, 0x83, 0, 0, 0]) + (offset // 512).to_bytes(4, "little")
                    + sectors.to_bytes(4, "little"))
            f.seek(510)
            f.write(b"\x55\xaa")
        layout["rootdev"] = "/dev/vda1"
    else:
        offset = UEFI_ROOT_START
        subprocess.run([SFDISK, "-q", root], check=True, text=True,
                       input=f"label: gpt\n2048,{(offset >> 9) - 2048},U\n{offset >> 9},,L\n")
        sectors = (size - offset - (1 << 20)) // 512      # the backup GPT lives at the end
        esp = os.path.join(folder, "esp.img")
        subprocess.run(["mkfs.fat", "-C", "-F", "32", "-n", "ESP", "-i", ESP_ID.replace("-", ""), esp,
                        str((offset - PART_START) // 1024)], check=True, capture_output=True)
        subprocess.run(["dd", f"if={esp}", f"of={root}", "bs=1M", "seek=1", "conv=notrunc", "status=none"],
                       check=True)
        os.unlink(esp)
        os.makedirs(os.path.join(tree, "boot", "efi"), exist_ok=True)
        layout["rootdev"] = "/dev/vda2"
        layout["vars"] = os.path.join(folder, "vars.fd")
    layout["offset"] = offset
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-L", "xrsroot", "-U", ROOT_UUID, "-d", tree,
                    "-E", f"offset={offset}", root, f"{sectors // 2}k"], check=True)
    srv = os.path.join(folder, "srv.img")
    make_fs(srv, "256M", fstype="ext3", label="xrssrv", options=["-O", "extents", "-U", SRV_UUID],
            populate=srv_tree)
    layout["srv"] = srv
    layout["disks"] = [root, srv]
    shutil.rmtree(tree)
    shutil.rmtree(srv_tree)

    # GRUB from inside the server, installed by the rescue image itself.
    g = rescue_boot(guest_factory, "server-grub-install", layout, [root, srv])
    g.wait_shell()
    install_grub(g, layout)
    assert g.poweroff("poweroff") == 0
    if firmware == "uefi":
        # It boots, from the boot entry grub-install made, before anything is
        # broken; cut off at the login prompt, as the UEFI scenario had done
        # first on every run.
        g, _ = boot_server(guest_factory, "server-first-boot", layout)
        g.kill()
    return layout, sums, time.monotonic() - start


def build_crashed(folder, guest_factory, base):
    """The plain BIOS server (layout BASE) cut off mid-write: booted, root
    logged in, a file written and synced, then the power cut. Returns
    (layout, {"boot seconds": of that boot}, seconds to build)."""
    start = time.monotonic()
    layout = copy_layout(folder, "crashed", base)
    g, boot = boot_server(guest_factory, "server-crash", layout)
    login(g)
    g.check("echo synced-before-the-crash > /root/crash-file && sync")
    g.kill()                              # the power cut
    assert "needs_recovery" in debugfs_r(layout["root"], "features")
    return layout, {"boot seconds": boot}, time.monotonic() - start


# The module fixtures that give a built server, and its name in the image cache
# (the broken servers made from them: tests/server_breaks.py's BROKEN).
CACHED_SERVERS = {"server": "bios", "crashed_server": "bios crashed mid-write", "uefi_server": "uefi",
                  "encrypted_server": "encrypted LVM on RAID1"}


def _slug(name):
    return "".join(c if c.isalnum() else "-" for c in name)


def in_cache(name):
    """Whether server NAME's image cache entry for today's inputs is there;
    builds nothing (no tarball yet: not there)."""
    r = host([FIXTURE, "--where"])
    tarball = r.stdout.strip()
    return r.returncode == 0 and os.path.isfile(tarball) and image_cache.ready(_slug(name), tarball)


def build_once(tmp_path_factory, name, builder):
    """Server NAME for a module's scenarios to copy: from the image cache
    (tests/image_cache.py), or built by BUILDER(folder, guest_factory) with
    its guests killed whatever happens (their logs kept in out/<arch>/test-logs/
    when it fails); prints the seconds it took. Returns (layout, data), data
    as BUILDER returned it ({path: sha256} of the data set for a plain build)."""
    slug = _slug(name)

    def build(folder):
        guests = Guests()
        try:
            layout, sums, took = builder(folder, guests)
        except BaseException:
            guests.finish(keep_logs=True)
            raise
        guests.finish(keep_logs=False)       # built: only a failed build keeps its logs
        print(f"\nserver fixture ({name}): built in {took:.0f} s")
        return layout, sums

    layout, sums, built = image_cache.cached(slug, fixture_tarball(), build,
                                             lambda: str(tmp_path_factory.mktemp("server-" + slug)))
    if not built:
        print(f"\nserver fixture ({name}): from the image cache")
    return layout, sums


def rescue_boot(guest_factory, name, layout, disks, append=None, mem=1024):
    """The rescue image, booted directly with the server's firmware (and its
    variable store under UEFI) and DISKS."""
    args = ["--direct", "--mem", str(mem)]
    if layout["firmware"] == "uefi":
        args += ["--firmware", "uefi", "--efivars", layout["vars"]]
    if append:
        args += ["--append", append]
    for d in disks:
        args += ["--disk", f"{d},if=virtio-blk,rw"]
    return guest_factory(name, args, boot_timeout=180)


def unattended_repair(guest_factory, name, layout, disks, params):
    """A rescue boot with PARAMS on the kernel command line (rescue.fsck=repair
    and rescue.after=poweroff among them) left to itself. Returns (serial log,
    seconds from QEMU's start to the power-off)."""
    g = rescue_boot(guest_factory, name, layout, disks, "console=ttyS0,115200n8 " + params)
    g.expect(["rescue-fsck repair: summary"], scaled(900), "the repair's summary")
    g.expect([r"reboot: Power down"], scaled(120), "the power-off")
    return g.serial_log(), time.monotonic() - g.started


GRUB_INSTALL = {"bios": "grub-install /dev/vda",
                "uefi": "grub-install --target=x86_64-efi --efi-directory=/boot/efi --bootloader-id=debian"}


def install_grub(g, layout):
    """rescue-mount --rw (the ESP follows from fstab), grub-install and
    update-grub in rescue-chroot: the repair of a lost boot loader, and how
    the fixture gets one at all."""
    g.check(f"rescue-mount --rw {layout['rootdev']}", timeout=120)
    out = g.check(f"rescue-chroot {GRUB_INSTALL[layout['firmware']]} 2>&1", timeout=600)
    assert "No error reported" in out, out
    g.check("rescue-chroot update-grub 2>&1", timeout=600)
    g.check("rescue-mount --umount")


def copy_layout(folder, name, layout):
    """Fresh copies of the server's disks (and variable store) for one scenario."""
    out = dict(layout)
    moved = {}
    for path in layout["disks"] + [layout["vars"]]:
        if path:
            moved[path] = os.path.join(folder, f"{name}-{os.path.basename(path)}")
            subprocess.run(["cp", "--sparse=always", path, moved[path]], check=True)
    out["disks"] = [moved[d] for d in layout["disks"]]
    for key in ("root", "srv", "vars"):
        if layout.get(key):
            out[key] = moved[layout[key]]
    return out


UNLOCK = r"Please unlock disk \S+: "


# Under SeaBIOS the first thing on the serial console is GRUB ("Booting
# `Debian GNU/Linux'", well within a second of QEMU's start here); SeaBIOS
# itself writes only to the screen.
BIOS_SILENCE = 15


def boot_server(guest_factory, name, layout, expect_login=True, timeout=600):
    """Boots the server from its own disks with its firmware; for an encrypted
    root, types the passphrase at its initramfs prompt. Returns (guest,
    seconds): at its login prompt, or stuck on the way (guest.stuck says
    where). A disk SeaBIOS cannot boot shows nothing at all on the serial
    console: silence for BIOS_SILENCE seconds counts as stuck there (with
    expect_login False) or fails the boot."""
    args = ["--own-disk", "--mem", "1024"]
    for d in layout["disks"]:
        args += ["--disk", f"{d},if=virtio-blk,rw"]
    if layout["firmware"] == "uefi":
        args += ["--firmware", "uefi", "--efivars", layout["vars"]]
    g = guest_factory(name, args, boot_timeout=timeout)
    g.stuck = None
    if layout["firmware"] == "bios":
        deadline = time.monotonic() + scaled(BIOS_SILENCE)
        while not g.serial_log().strip() and time.monotonic() < deadline and g.child.isalive():
            time.sleep(0.1)
        if not g.serial_log().strip():
            if not g.child.isalive():
                raise GuestError(f"{name}: QEMU exited before the boot loader; log {g.log_path}")
            g.stuck = f"nothing on the serial console for {scaled(BIOS_SILENCE):.0f} s: no boot loader"
            if expect_login:
                raise GuestError(f"{name}: {g.stuck}; log {g.log_path}")
            return g, time.monotonic() - g.started
    try:
        while True:
            i = g.expect([UNLOCK, LOGIN] + STUCK, scaled(timeout), "the server's login prompt or where it stopped")
            if i > 0:
                break
            g.child.sendline(layout["passphrase"])
        g.stuck = None if i == 1 else STUCK[i - 2]
    except GuestError:
        if expect_login or g.serial_log().strip():
            raise
        g.stuck = f"nothing on the serial console for {timeout} s: no boot loader"
    took = time.monotonic() - g.started
    if expect_login and g.stuck:
        raise GuestError(f"{name}: the server stopped at '{g.stuck}'; log {g.log_path}")
    if not expect_login and not g.stuck:
        raise GuestError(f"{name}: the server booted, though it was broken; log {g.log_path}")
    return g, took


def figures(name, failing, repair, good):
    """Prints a scenario's seconds (pytest -s shows them)."""
    print(f"\n{name}: failing boot {failing:.0f} s (when its image cache entry was built), "
          f"repair {repair:.0f} s, good boot {good:.0f} s")


def login(g):
    """Logs in as root on the server's serial console; the shell then works with run()."""
    g.child.sendline("root")
    g.expect([r"Password:"], scaled(60), "the password prompt")
    g.child.sendline(PASSWORD)
    g.expect([r"root@xrserver:~# "], scaled(120), "root's shell")
    # Kernel messages (a CPU driver's) on this console would land inside command output.
    g.child.sendline("stty -echo; dmesg -n 1; PS1='xrserver# '")
    g.expect([r"xrserver# "], scaled(30), "the new prompt")
