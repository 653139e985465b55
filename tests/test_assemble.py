"""md RAID, LVM and LUKS: volumes made in a preparation boot of the image (the
host has no md or device-mapper), then reached by rescue-assemble in fresh
boots. Read-only sessions must leave every member image byte-identical; the
read-write repair must leave a volume that a later boot finds clean."""
import os
import re
import shutil
import subprocess

import pytest

from disks import make_fs, sha256_file, tree

PASS = "xr-correct-horse"
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


def dev(name):
    return "/dev/vd" + chr(ord("a") + NAMES.index(name))


def boot(guest, name, images, mem=768):
    args = ["--direct", "--mem", str(mem)]
    for img in images:
        args += ["--disk", f"{img},if=virtio-blk,rw"]
    g = guest(name, args)
    g.wait_shell()
    return g


def fill(g, target):
    """mkfs.ext4 on TARGET and copy the known tree (on the last disk) into it."""
    g.check(f"mkfs.ext4 -q -F -L xr{os.path.basename(target)} {target} && mount {target} /mnt/t && "
            f"cp -a /mnt/src/. /mnt/t/ && umount /mnt/t", timeout=120)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Member images made once by the image's own mdadm, lvm and cryptsetup."""
    from harness import Guest
    folder = tmp_path_factory.mktemp("assemble")
    src_tree = folder / "tree"
    sums = tree(str(src_tree), files=24)
    src = str(folder / "src.img")
    make_fs(src, "16M", label="xrsrc", populate=str(src_tree))
    images = {}
    for name, size in MEMBERS.items():
        images[name] = str(folder / f"{name}.img")
        subprocess.run(["truncate", "-s", size, images[name]], check=True)
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
        g.check(f"{md} /dev/md/r5 --name=r5 --level=5 --raid-devices=3 {dev('r5a')} {dev('r5b')} {dev('r5c')}")
        fill(g, "/dev/md/r5")
        g.check(f"lvm pvcreate -q {dev('lv')} && lvm vgcreate -q xrvg {dev('lv')} && "
                f"lvm lvcreate -q -l 100%FREE -n data xrvg")
        fill(g, "/dev/xrvg/data")
        g.check(f"printf %s '{PASS}' | {LUKS_FORMAT} {dev('luks')} && "
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


def copies(prepared, tmp_path, names):
    """Fresh copies of the named member images, in virtio order, plus the source tree."""
    out = []
    for name in names:
        dst = str(tmp_path / f"{name}.img")
        shutil.copyfile(prepared["images"][name], dst)
        out.append(dst)
    return out


def verify(g, device, label):
    """e2fsck -fn clean, mounted read-only, every file matches its checksum."""
    g.check(f"e2fsck -fn {device}", timeout=120)
    g.check(f"mkdir -p /mnt/{label} && mount -o ro,noload {device} /mnt/{label}")
    g.check(f"(cd /mnt/{label} && sha256sum -c -s SHA256SUMS)", timeout=120)
    g.check(f"umount /mnt/{label}")


def test_read_only_session_reaches_every_layout_and_writes_nothing(guest, prepared, tmp_path):
    names = [n for n in NAMES if n != "r1b"]        # RAID1 with one member missing
    images = copies(prepared, tmp_path, names)
    before = {i: sha256_file(i) for i in images}
    g = boot(guest, "assemble-read-only", images)
    status, out = g.run(f"printf '%s\\n' '{PASS}' | rescue-assemble", timeout=300)
    assert status == 1, f"a degraded array left out should make the status 1: {out}"
    assert "read-only: members set read-only" in out, out
    assert re.search(r"md +/dev/md\S+ \(r1\): not started: 1 of 2 members \(vd\w\) present; add --degraded", out), out
    assert re.search(r"md +/dev/md\S+ raid5 from vd\w vd\w vd\w: started readonly", out), out
    assert re.search(r"lvm +/dev/xrvg/data \(.*\): active read-only", out), out
    assert re.search(r"lvm +/dev/stackvg/crypt \(.*\): active read-only", out), out
    assert len(re.findall(r"luks +/dev/\S+ -> /dev/mapper/luks-[0-9a-f-]+: opened read-only", out)) == 3, out
    assert re.search(r"lvm +/dev/cryptvg/root \(.*\): active read-only", out), out
    assert "EXT4" in out.upper() or "ext4" in out      # extscan's table follows
    for dm in g.check("ls /sys/class/block | grep -E '^(md|dm-)'").split():
        assert g.check(f"cat /sys/class/block/{dm}/ro").strip() == "1", f"{dm} is writable"
    assert g.run("dd if=/dev/zero of=/dev/xrvg/data bs=4096 count=1 2>/dev/null")[0] != 0, "an LV took a write"
    raid5 = g.check("ls /dev/md/ | grep r5").strip()
    verify(g, f"/dev/md/{raid5}", "r5")
    verify(g, "/dev/xrvg/data", "lv")
    luks_lv = g.check("for d in /sys/class/block/dm-*; do [ $(cat $d/dm/name) = stackvg-crypt ] && basename $d/holders/*; done; true").strip()
    verify(g, "/dev/" + luks_lv, "stack")
    # Now the degraded RAID1, asked for explicitly: still read-only, no resync.
    out = g.check("rescue-assemble --degraded --quiet", timeout=120)
    assert re.search(r"md +/dev/md\S+ raid1 from vd\w: started readonly, DEGRADED \(1 of 2 members\)", out), out
    r1 = g.check("ls /dev/md/ | grep r1").strip()
    verify(g, f"/dev/md/{r1}", "r1")
    assert "resync" not in g.check("cat /proc/mdstat")
    g.check("rescue-assemble --stop")
    g.poweroff()
    changed = [os.path.basename(i) for i in images if sha256_file(i) != before[i]]
    assert not changed, f"the read-only session wrote to {changed}"


def test_default_boot_assembles_nothing(guest, prepared, tmp_path):
    images = copies(prepared, tmp_path, NAMES)
    before = {i: sha256_file(i) for i in images}
    g = boot(guest, "assemble-default-boot", images)
    assert not g.check("ls /sys/class/block | grep -E '^(md|dm-)'; true").strip()
    g.poweroff()
    assert all(sha256_file(i) == before[i] for i in images), "the default boot wrote to a member"


def test_read_write_repair_through_luks_and_lvm(guest, prepared, tmp_path):
    images = copies(prepared, tmp_path, ["cl"])
    g = boot(guest, "assemble-repair", images)
    out = g.check(f"printf '%s\\n' '{PASS}' | rescue-assemble --rw=cryptvg/root --quiet", timeout=300)
    assert re.search(r"dm +/dev/mapper/luks-\S+: read-write", out), out
    assert re.search(r"dm +/dev/mapper/cryptvg-root: read-write", out), out
    status, _ = g.run("e2fsck -fn /dev/cryptvg/root", timeout=120)
    assert status == 4, "the damage made in the preparation boot is not there"
    status, out = g.run("e2fsck -fy /dev/cryptvg/root", timeout=120)
    assert status == 1, f"e2fsck -fy exited {status}: {out}"
    g.check("rescue-assemble --stop && sync")
    g.poweroff()
    # A second boot, read-only, finds it clean.
    before = sha256_file(images[0])
    g = boot(guest, "assemble-repair-check", images)
    g.check(f"printf '%s\\n' '{PASS}' | rescue-assemble --quiet", timeout=300)
    g.check("e2fsck -fn /dev/cryptvg/root", timeout=120)
    g.poweroff()
    assert sha256_file(images[0]) == before


def test_bad_input_is_refused_and_writes_nothing(guest, prepared, tmp_path):
    # A wrong passphrase; a volume group missing a PV; members of two different
    # arrays (each alone); a LUKS volume whose headers are damaged.
    names = ["luks", "pva", "r1a", "s2", "cl"]
    images = copies(prepared, tmp_path, names)
    with open(images[4], "r+b") as f:      # keep the magic, wipe both JSON areas
        f.seek(512)
        f.write(b"\0" * (32768 - 512))
    before = {i: sha256_file(i) for i in images}
    g = boot(guest, "assemble-bad-input", images)
    status, out = g.run("printf 'not-the-passphrase\\n' | rescue-assemble --quiet", timeout=300)
    assert status == 1, out
    assert re.search(r"luks +/dev/vda: not opened: wrong passphrase or key file", out), out
    assert re.search(r"lvm +splitvg: not activated: .*", out) or \
        re.search(r"lvm +/dev/splitvg/wide .*not active", out), out
    assert len(re.findall(r"md +/dev/md\S+ \(\w+\): not started: 1 of 2 members", out)) == 2, out
    assert re.search(r"luks +/dev/vde: not opened: ", out), out
    assert not g.check("ls /sys/class/block | grep -E '^(md|dm-)'; true").strip(), "something stayed active"
    status, out = g.run("rescue-assemble --key-file=/dev/vdz:/key")
    assert status == 2 and "rescue-assemble: cannot mount the key file's device /dev/vdz" in out, out
    g.poweroff()
    changed = [os.path.basename(i) for i in images if sha256_file(i) != before[i]]
    assert not changed, f"refused input still wrote to {changed}"


def test_boot_parameters_assemble_then_check(guest, prepared, tmp_path):
    from harness import run_to_poweroff
    images = copies(prepared, tmp_path, ["luks", "r5a", "r5b", "r5c"])
    key_tree = tmp_path / "key"
    key_tree.mkdir()
    (key_tree / "luks.key").write_text(PASS)
    keydisk = str(tmp_path / "key.img")
    make_fs(keydisk, "8M", label="xrkey", populate=str(key_tree))
    before = {i: sha256_file(i) for i in images + [keydisk]}
    log = run_to_poweroff(guest, "assemble-boot-parameters", images + [keydisk],
                          "rescue.assemble=ro rescue.keyfile=LABEL=xrkey:/luks.key rescue.fsck=check", mem=768)
    assert re.search(r"luks +/dev/vda -> /dev/mapper/luks-\S+: opened read-only", log), log[-3000:]
    assert re.search(r"md +/dev/md\S+ raid5 from vdb vdc vdd: started readonly", log), log[-3000:]
    checked = re.findall(r"^.*(?:/dev/mapper/luks-|/dev/md)\S*.*$", log.split("unattended rescue.fsck=check")[-1],
                         re.M)
    assert any("luks-" in line and "clean" in line for line in checked), checked
    assert any("/dev/md" in line and "clean" in line for line in checked), checked
    changed = [os.path.basename(i) for i in before if sha256_file(i) != before[i]]
    assert not changed, f"rescue.assemble=ro with rescue.fsck=check wrote to {changed}"


def test_rescue_mount_follows_fstab_into_lvm_md_and_luks(guest, prepared, tmp_path):
    root_tree = tmp_path / "root"
    for d in ("etc", "lv", "r5", "secret"):
        (root_tree / d).mkdir(parents=True)
    (root_tree / "etc" / "fstab").write_text(
        "LABEL=xrroot            /        ext4  defaults  0 1\n"
        "/dev/xrvg/data          /lv      ext4  defaults  0 2\n"
        "/dev/md/r5              /r5      ext4  defaults  0 2\n"
        "LABEL=xrxrluks          /secret  ext4  defaults  0 2\n")
    root = str(tmp_path / "root.img")
    make_fs(root, "16M", label="xrroot", populate=str(root_tree))
    images = copies(prepared, tmp_path, ["lv", "r5a", "r5b", "r5c", "luks"]) + [root]
    before = {i: sha256_file(i) for i in images}
    g = boot(guest, "assemble-rescue-mount", images)
    g.check(f"printf '%s\\n' '{PASS}' | rescue-assemble --quiet", timeout=300)
    g.check("rescue-mount LABEL=xrroot", timeout=120)
    mounts = g.check("cat /proc/mounts")
    for point in ("/mnt/root/lv", "/mnt/root/r5", "/mnt/root/secret"):
        assert re.search(rf"^\S+ {point} ext4 ro[,\s]", mounts, re.M), f"{point} not mounted read-only: {mounts}"
    for point in ("lv", "r5", "secret"):
        g.check(f"(cd /mnt/root/{point} && sha256sum -c -s SHA256SUMS)")
    g.check("rescue-mount --umount && rescue-assemble --stop")
    g.poweroff()
    changed = [os.path.basename(i) for i in images if sha256_file(i) != before[i]]
    assert not changed, f"the read-only session wrote to {changed}"
