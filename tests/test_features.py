"""Feature matrix: a volume with each ext feature mounts and checks clean in
the image, and extscan's verdicts match what actually happened."""
import json
import os
import re
import subprocess

from harness import OUT, host

UPSTREAM_CONF = os.path.join(OUT, "build", "e2fsprogs-src", "misc", "mke2fs.conf.in")
MKE2FS = os.path.join(OUT, "build", "e2fsprogs", "misc", "mke2fs")

# label: (type, mke2fs options)
VOLUMES = {
    "ext2": ("ext2", []),
    "ext3": ("ext3", []),
    "ext3x": ("ext3", ["-O", "extents"]),
    "ext4-147": ("ext4", ["-O", "orphan_file,metadata_csum_seed"]),
    "64bit": ("ext4", ["-O", "64bit"]),
    "bigalloc": ("ext4", ["-O", "bigalloc", "-C", "16384"]),
    "inline": ("ext4", ["-O", "inline_data"]),
    "casefold": ("ext4", ["-O", "casefold"]),
    "encrypt": ("ext4", ["-O", "encrypt"]),
    "verity": ("ext4", ["-O", "verity"]),
    "quota-proj": ("ext4", ["-O", "quota,project"]),
    "large_dir": ("ext4", ["-O", "large_dir"]),
    "ea_inode": ("ext4", ["-O", "ea_inode"]),
    "meta_bg": ("ext4", ["-O", "meta_bg,^resize_inode"]),
    "mmp": ("ext4", ["-O", "mmp", "-E", "mmp_update_interval=1"]),
    "sparse_super2": ("ext4", ["-O", "sparse_super2"]),
    "fast_commit": ("ext4", ["-O", "fast_commit"]),
    "1k-blocks": ("ext4", ["-b", "1024"]),
}

SCRIPT = ("for d in $(extscan --devices | cut -f1); do "
          "l=$(blkid -s LABEL -o value $d); v=$(extscan --json $d | tr -d '\\n'); "
          "mount $d /mnt 2>/dev/null; m=$?; w=-; "
          "if [ $m = 0 ]; then touch /mnt/.rw 2>/dev/null; w=$?; umount /mnt; fi; "
          "e2fsck -fn $d >/dev/null 2>&1; f=$?; "
          "echo \"RESULT $l $m $w $f $v\"; done")


def test_feature_matrix(guest, tmp_path):
    disks = []
    for label, (fstype, opts) in VOLUMES.items():
        img = str(tmp_path / f"{label}.img")
        subprocess.run(["truncate", "-s", "64M", img], check=True)
        env = dict(os.environ, MKE2FS_CONFIG=UPSTREAM_CONF)
        subprocess.run([MKE2FS, "-q", "-F", "-t", fstype, "-L", label] + opts + [img], check=True, env=env)
        disks.append(img)
    args = ["--direct", "--mem", "2048"]
    for d in disks:
        args += ["--disk", f"{d},if=virtio-blk,rw"]
    g = guest("feature-matrix", args, boot_timeout=300)
    g.wait_shell()
    out = g.check(SCRIPT, timeout=600)
    assert g.poweroff() == 0
    g.assert_no_fatal()

    results, problems = {}, []
    for line in out.splitlines():
        m = re.match(r"RESULT (\S+) (\d+) (\S+) (\d+) (\[.*\])$", line.strip())
        if m:
            results[m.group(1)] = m
    for label in VOLUMES:
        if label not in results:
            problems.append(f"{label}: not found by extscan")
            continue
        m = results[label]
        mounted, wrote, fsck = int(m.group(2)), m.group(3), int(m.group(4))
        v = json.loads(m.group(5))[0]
        expect_rw = v["kernel_mount"] == "rw"
        if expect_rw != (mounted == 0 and wrote == "0"):
            problems.append(f"{label}: extscan says {v['kernel_mount']} but mount={mounted} write={wrote}")
        if (v["e2fsck"] == "yes") != (fsck == 0):
            problems.append(f"{label}: extscan says e2fsck {v['e2fsck']} but e2fsck -fn exited {fsck}")
        if mounted != 0:
            problems.append(f"{label}: does not mount")
    for img in disks:
        r = host(["e2fsck", "-fn", img])
        if r.returncode != 0:
            problems.append(f"{os.path.basename(img)}: host e2fsck -fn exited {r.returncode}")
    print(f"feature matrix: {len(VOLUMES) - len({p.split(':')[0] for p in problems})}/{len(VOLUMES)} volumes "
          "mount, check clean and match extscan")
    assert not problems, "\n".join(problems)
