"""md RAID, LVM and LUKS: volumes made in a preparation boot of the image (the
host has no md or device-mapper), then reached by rescue-assemble in fresh
boots. Read-only sessions must leave every member image byte-identical; the
read-write repair must leave a volume that a later boot finds clean."""
import os
import pathlib
import re
import shutil

import pytest

import image_cache
from disks import make_fs, sha256_file
from harness import boot_with_disks
from stacks import LUKS_UUID, NAMES, PASS, R5_UUID, STACK_LUKS_DEV, prepare


def boot(guest, name, images):
    return boot_with_disks(guest, name, images, mem=768)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """The member images (stacks.prepare), from the image cache when today's
    inputs made them before (a preparation boot of 30 s)."""
    def build(folder):
        made = prepare(pathlib.Path(folder))
        return made["images"], made["sums"]
    images, _, _ = image_cache.cached("assemble-stacks", None, build,
                                      lambda: str(tmp_path_factory.mktemp("assemble")))
    return {"images": images}


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
    luks_lv = g.check(STACK_LUKS_DEV).strip()
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
    assert status == 2 and "rescue-assemble: no device '/dev/vdz' for the key file" in out, out
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
    for d in ("etc/mdadm", "lv", "r5", "secret"):
        (root_tree / d).mkdir(parents=True)
    (root_tree / "etc" / "fstab").write_text(
        "LABEL=xrroot            /        ext4  defaults  0 1\n"
        "/dev/xrvg/data          /lv      ext4  defaults  0 2\n"
        "/dev/md0                /r5      ext4  defaults  0 2\n"
        "/dev/mapper/secret_crypt /secret ext4  defaults  0 2\n")
    (root_tree / "etc" / "mdadm" / "mdadm.conf").write_text(
        f"HOMEHOST <system>\nARRAY /dev/md0 metadata=1.2 UUID={R5_UUID} name=otherhost:0\n")
    (root_tree / "etc" / "crypttab").write_text(
        f"# a separately encrypted volume, as installers write it\n"
        f"secret_crypt /dev/disk/by-uuid/{LUKS_UUID} none luks,discard\n")
    root = str(tmp_path / "root.img")
    make_fs(root, "16M", label="xrroot", populate=str(root_tree))
    images = copies(prepared, tmp_path, ["lv", "r5a", "r5b", "r5c", "luks"]) + [root]
    before = {i: sha256_file(i) for i in images}
    g = boot(guest, "assemble-rescue-mount", images)
    g.check(f"printf '%s\\n' '{PASS}' | rescue-assemble --quiet", timeout=300)
    out = g.check("rescue-mount LABEL=xrroot", timeout=120)
    assert f"/dev/mapper/luks-{LUKS_UUID} renamed secret_crypt" in out, out
    assert re.search(r"\(mdadm.conf\) +/dev/md12\d +md +linked as /dev/md0", out), out
    mounts = g.check("cat /proc/mounts")
    for point in ("/mnt/root/lv", "/mnt/root/r5", "/mnt/root/secret"):
        assert re.search(rf"^\S+ {point} ext4 ro[,\s]", mounts, re.M), f"{point} not mounted read-only: {mounts}"
    for point in ("lv", "r5", "secret"):
        g.check(f"(cd /mnt/root/{point} && sha256sum -c -s SHA256SUMS)")
    g.check("rescue-mount --umount && rescue-assemble --stop")
    g.poweroff()
    changed = [os.path.basename(i) for i in images if sha256_file(i) != before[i]]
    assert not changed, f"the read-only session wrote to {changed}"
