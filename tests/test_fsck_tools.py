"""The image's e2fsprogs and util-linux tools on real disks, checked from the host."""
import os
import re
import subprocess


from harness import OUT, host, upstream_version

E2FS = os.path.join(OUT, "build", "e2fsprogs")
UPSTREAM_CONF = os.path.join(OUT, "build", "e2fsprogs-src", "misc", "mke2fs.conf.in")
TOOLS = ["e2fsck", "fsck.ext2", "fsck.ext3", "fsck.ext4", "mke2fs", "mkfs.ext2", "mkfs.ext3",
         "mkfs.ext4", "tune2fs", "e2label", "dumpe2fs", "debugfs", "resize2fs", "e2image",
         "e2undo", "e4defrag", "filefrag", "e2freefrag", "badblocks", "mklost+found",
         "e2mmpstatus", "fsck", "lsblk", "blkid", "findmnt", "sfdisk", "fdisk", "wipefs"]


def features(img):
    out = host(["dumpe2fs", "-h", img]).stdout
    return set(re.search(r"^Filesystem features:\s*(.*)$", out, re.M).group(1).split())


def test_tools_and_new_volumes(guest, tmp_path):
    # A volume with the 1.47 upstream defaults, made by our own mke2fs...
    ours = str(tmp_path / "ours.img")
    subprocess.run(["truncate", "-s", "96M", ours], check=True)
    env = dict(os.environ, MKE2FS_CONFIG=UPSTREAM_CONF)
    subprocess.run([os.path.join(E2FS, "misc/mke2fs"), "-q", "-t", "ext4", "-L", "ours", ours],
                   check=True, env=env)
    assert {"orphan_file", "metadata_csum_seed"} <= features(ours)
    # ...one by the host's mke2fs with the same features asked for...
    theirs = str(tmp_path / "host.img")
    subprocess.run(["truncate", "-s", "96M", theirs], check=True)
    subprocess.run(["mke2fs", "-q", "-t", "ext4", "-O", "orphan_file,metadata_csum_seed",
                    "-L", "host", theirs], check=True)
    # ...and a blank disk for the image's own mke2fs.
    blank = str(tmp_path / "blank.img")
    subprocess.run(["truncate", "-s", "96M", blank], check=True)

    g = guest("fsck-tools", ["--direct", "--disk", f"{ours},if=virtio-blk",
                             "--disk", f"{theirs},if=virtio-blk", "--disk", f"{blank},if=virtio-blk,rw"])
    g.wait_shell()
    missing = g.check("for t in " + " ".join(TOOLS) + "; do command -v $t >/dev/null || echo MISSING:$t; done")
    assert "MISSING" not in missing, missing
    # The real programs, not busybox applets of the same name.
    assert g.check("readlink -f $(command -v fsck.ext4)") .strip() == "/sbin/e2fsck"
    # The pinned versions, as the programs name themselves.
    assert f"e2fsck {upstream_version('e2fsprogs')}" in g.run("e2fsck -V")[1]
    assert f"util-linux {upstream_version('util-linux')}" in g.check("lsblk --version")

    for dev, label in (("vda", "ours"), ("vdb", "host")):
        status, out = g.run(f"e2fsck -fn /dev/{dev}")
        assert status == 0, f"e2fsck -fn /dev/{dev} exited {status}: {out}"
        feats = g.check(f"tune2fs -l /dev/{dev} | grep features")
        assert "orphan_file" in feats and "metadata_csum_seed" in feats, feats
        assert f'LABEL="{label}"' in g.check(f"blkid /dev/{dev}")
    assert re.search(r"vda\s+ext4\s+ours", g.check("lsblk -rno NAME,FSTYPE,LABEL /dev/vda"))

    g.check("mke2fs -q -t ext4 -L made-here /dev/vdc")
    assert g.poweroff() == 0
    g.assert_no_fatal()

    made = features(blank)
    assert "orphan_file" not in made and "metadata_csum_seed" not in made, made
    assert {"has_journal", "extent", "metadata_csum", "64bit"} <= made, made
    r = host(["e2fsck", "-fn", blank])
    assert r.returncode == 0, r.stdout + r.stderr
    for img in (ours, theirs):
        assert host(["e2fsck", "-fn", img]).returncode == 0, f"{img} changed by a read-only boot"
