"""The disks of a server that lost power: volumes whose journal needs recovery,
made by writing in the image and killing QEMU. A read-only look (rescue-mount,
its fstab volumes, rescue-fsck check, a LUKS key file's device) replays the
journal into RAM and shows the last committed files; the disks stay byte for
byte as they were. Where the overlay does not fit in RAM, noload instead."""
from disks import blank, committed_writes, make_fs, sha256_file
from harness import boot_with_disks, host

KEY = "xr-crash-key-0123456789"


def needs_recovery(img):
    r = host(["dumpe2fs", "-h", img])
    return "needs_recovery" in r.stdout


def crash(guest, tmp_path):
    """Root (fstab names /data), a data volume with a 256 MiB journal, a key
    file's volume and a LUKS2 volume: the data and key volumes written, synced
    and cut off by killing QEMU."""
    root_tree = tmp_path / "root"
    (root_tree / "etc").mkdir(parents=True)
    for d in ("data", "dev", "proc", "sys", "run"):
        (root_tree / d).mkdir()
    (root_tree / "etc" / "fstab").write_text("LABEL=xrcroot / ext4 defaults 0 1\n"
                                             "LABEL=xrcdata /data ext4 defaults 0 2\n")
    disks = {name: str(tmp_path / f"{name}.img") for name in ("root", "data", "key", "luks")}
    make_fs(disks["root"], "32M", label="xrcroot", populate=str(root_tree))
    make_fs(disks["data"], "1G", label="xrcdata", options=["-J", "size=256"])
    make_fs(disks["key"], "32M", label="xrckey")
    blank(disks["luks"], "40M")
    g = boot_with_disks(guest, "crash-prepare", list(disks.values()), mem=768)
    g.check(f"printf %s '{KEY}' > /run/key && cryptsetup luksFormat --batch-mode --type luks2 "
            "--pbkdf pbkdf2 --pbkdf-force-iterations 1000 --key-file=/run/key /dev/vdd && "
            "cryptsetup open --key-file=/run/key /dev/vdd xrc && mkfs.ext4 -q -L xrcluks /dev/mapper/xrc && "
            "cryptsetup close xrc", timeout=180)
    g.check("mkdir -p /mnt/d /mnt/k && mount /dev/vdb /mnt/d && mount /dev/vdc /mnt/k && "
            f"printf %s '{KEY}' > /mnt/k/keyfile && " + committed_writes("/mnt/d"))
    # Power cut: no unmount, no checkpoint.
    g.kill()
    for name in ("data", "key"):
        assert needs_recovery(disks[name]), f"{name}: the power cut left no journal to recover"
    return disks


def test_read_only_look_at_a_crashed_server(guest, tmp_path):
    disks = crash(guest, tmp_path)
    before = {n: sha256_file(d) for n, d in disks.items()}

    g = boot_with_disks(guest, "crash-look", list(disks.values()), mem=1024)
    out = g.check("rescue-mount LABEL=xrcroot", timeout=120)
    assert "/data" in out and "journal replayed in RAM" in out, out
    assert g.check("cat /mnt/root/data/file1 /mnt/root/data/file8").split() == ["committed-1", "committed-8"]
    g.check("(cd /mnt/root/data && md5sum -c big.md5)")
    assert g.run("touch /mnt/root/data/new")[0] != 0, "a read-only mount took a write"
    assert g.check("blockdev --getro /dev/vdb").strip() == "1", "the kernel was not told: vdb is writable"
    g.check("rescue-mount --umount")
    assert not g.check("ls /dev/mapper | grep xr-ro- || true").strip(), "an overlay was left behind"
    assert g.check("blockdev --getro /dev/vdb").strip() == "0", "--umount left vdb read-only"

    out = g.check("rescue-fsck check /dev/vdb /dev/vdc", timeout=300)
    assert "/dev/vdb: journal replayed in RAM; the disk is untouched" in out, out
    assert "/dev/vdb         0      clean (journal replayed in RAM)" in out, out
    assert "/dev/vdc         0      clean (journal replayed in RAM)" in out, out

    out = g.check("rescue-assemble --key-file=LABEL=xrckey:/keyfile", timeout=180)
    assert "opened read-only" in out, out
    g.check("rescue-assemble --stop")
    assert g.poweroff() == 0
    g.assert_no_fatal()
    changed = [n for n, d in disks.items() if sha256_file(d) != before[n]]
    assert not changed, f"a read-only look wrote to {changed}"
    for name in ("data", "key"):
        assert needs_recovery(disks[name]), f"{name}: the journal was replayed on the disk"


def test_noload_when_the_overlay_does_not_fit(guest, tmp_path):
    disks = crash(guest, tmp_path)
    before = sha256_file(disks["data"])
    # 256 MiB of RAM: /run holds 128 MiB, a 256 MiB journal's replay may need 388.
    g = boot_with_disks(guest, "crash-noload", [disks["data"]], mem=256)
    out = g.check("mkdir -p /mnt/x && /lib/extrescue/disks/mount-ro /dev/vda /mnt/x")
    assert "noload: journal NOT replayed" in out and "MiB of RAM" in out, out
    g.check("umount /mnt/x && /lib/extrescue/disks/release-ro")
    out = g.check("rescue-fsck check /dev/vda", timeout=120)
    assert "journal NOT replayed (no room in RAM" in out, out
    assert g.poweroff() == 0
    g.assert_no_fatal()
    assert sha256_file(disks["data"]) == before, "the noload look wrote to the disk"
