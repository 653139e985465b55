"""Feature matrix: every ext feature e2fsprogs' own feature list names, and
the combinations servers use, made by the shipped mke2fs; booted once, each
volume mounts read-only and read-write, reads back its files, takes a new
one and checks clean, in the image and on the host, and extscan's verdict
matches what the kernel did."""
import hashlib
import json
import os
import re
import subprocess

from harness import OUT, host

E2FSPROGS = os.path.join(OUT, "build", "e2fsprogs")
FEATURE_C = os.path.join(OUT, "build", "e2fsprogs-src", "lib", "e2p", "feature.c")
UPSTREAM_CONF = os.path.join(OUT, "build", "e2fsprogs-src", "misc", "mke2fs.conf.in")
MKE2FS = os.path.join(E2FSPROGS, "misc", "mke2fs")
E2FSCK = os.path.join(E2FSPROGS, "e2fsck", "e2fsck")
DEBUGFS = os.path.join(E2FSPROGS, "debugfs", "debugfs")

# The combinations servers use and the sizes a volume can have, beside one
# row per feature: name -> mke2fs options. "must" rows fail the test unless
# they pass; a feature row may instead be explained (mke2fs will not set it,
# or extscan said beforehand that this kernel cannot mount it).
EXTERNAL = "external journal"
COMBINATIONS = {
    "ext2": ["-t", "ext2"],
    "ext3": ["-t", "ext3"],
    "ext3+extents": ["-t", "ext3", "-O", "extents"],
    "1.47 defaults+orphan_file+csum_seed": ["-O", "orphan_file,metadata_csum_seed"],
    "bigalloc 16K clusters": ["-O", "bigalloc", "-C", "16384"],
    "bigalloc 64K clusters": ["-O", "bigalloc", "-C", "65536"],
    "casefold+encrypt": ["-O", "casefold,encrypt"],
    "quota+project": ["-O", "quota,project"],
    "128-byte inodes": ["-I", "128"],
    "1 KiB inodes": ["-I", "1024"],
    EXTERNAL: ["-J", "device=JOURNAL"],
}
COMBINATIONS.update({f"{b // 1024}K blocks": ["-b", str(b)] for b in (1024, 2048, 4096, 8192, 16384, 32768, 65536)})
# What mke2fs needs beside a feature: meta_bg replaces resize_inode; an MMP
# volume's mount waits twice its update interval, 5 s unless told.
WITH_FEATURE = {"meta_bg": ["-O", "^resize_inode"], "mmp": ["-E", "mmp_update_interval=1"]}
# Linux refuses encryption with blocks larger than the page at all: the row
# shows that extscan says so before anyone tries.
EXPECTED_REFUSALS = {"encrypt+64K blocks": ["-O", "encrypt", "-b", "65536"]}


def feature_names():
    """One name for each feature bit in lib/e2p/feature.c (aliases dropped)."""
    with open(FEATURE_C) as f:
        text = f.read()
    table = text[text.index("feature_list[]"):text.index("jrnl_feature_list[]")]
    seen, names = set(), []
    for kind, mask, name in re.findall(r'\{\s*E2P_FEATURE_(\w+)\s*,\s*(\w+)\s*,\s*"([^"]+)"\s*\}', table):
        if (kind, mask) not in seen:
            seen.add((kind, mask))
            names.append(name)
    return names


def content(folder):
    """Files every volume carries: text, binary, a directory of 150 names, links."""
    os.makedirs(os.path.join(folder, "dir"))
    with open(os.path.join(folder, "small.txt"), "w") as f:
        f.write("extrescue feature matrix\n")
    blob = b"".join(hashlib.sha256(str(i).encode()).digest() for i in range(9000))
    with open(os.path.join(folder, "random.bin"), "wb") as f:
        f.write(blob)
    for i in range(150):
        with open(os.path.join(folder, "dir", f"f{i:03d}"), "w") as f:
            f.write(f"entry {i}\n" * (i % 7 + 1))
    os.symlink("small.txt", os.path.join(folder, "link"))
    os.link(os.path.join(folder, "small.txt"), os.path.join(folder, "hard"))
    # What the guest prints: every regular file, sorted by path, concatenated.
    paths = []
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                paths.append("./" + os.path.relpath(path, folder))
    digest = hashlib.sha256()
    for rel in sorted(paths):
        with open(os.path.join(folder, rel), "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()


# One volume: extscan's verdict, a read-only mount read back, a read-write
# mount written, e2fsck -fn. $1 label, $2 extra mount options, $3 e2fsck options.
GUEST_ROW = " ".join(r"""row() {
d=$(blkid -L "$1"); [ -n "$d" ] || { echo "ROW $1 nodev - - 8 - []"; return; };
v=$(extscan --json "$d" | tr -d '\n'); why=;
if mount -o ro${2:+,$2} "$d" /mnt 2>/dev/null; then
 r=$(cd /mnt && find . -type f ! -path './lost+found/*' | sort | xargs cat | sha256sum | cut -c1-64); umount /mnt;
else r=fail; why=$(dmesg | grep -o "EXT4-fs (${d##*/}): .*" | tail -n1 | tr ' ' _); fi;
if mount -o rw${2:+,$2} "$d" /mnt 2>/dev/null; then
 { echo "written in $1" > /mnt/written && sync && w=ok || w=writefail; }; umount /mnt || w=umountfail;
else w=fail; fi;
e2fsck -fn $3 "$d" >/dev/null 2>&1; c=$?;
echo "ROW $1 $r $w $c ${why:--} $v"; }""".split())


def make_volume(img, size, opts, label, env):
    subprocess.run(["truncate", "-s", size, img], check=True)
    kind = [] if "-t" in opts else ["-t", "ext4"]
    return host([MKE2FS, "-q", "-F", "-L", label] + kind + opts + [img], env=env)


def test_feature_matrix(guest, tmp_path):
    env = dict(os.environ, MKE2FS_CONFIG=UPSTREAM_CONF)
    files = str(tmp_path / "files")
    expect_sum = content(files)
    rows = [(" ".join(o), o, False) for o in (["-O", n] + WITH_FEATURE.get(n, []) for n in feature_names())]
    rows += [(name, opts, True) for name, opts in COMBINATIONS.items()]
    rows += [(name, opts, False) for name, opts in EXPECTED_REFUSALS.items()]

    # The external journal: a journal device, which mke2fs takes only as a
    # block device; a loop device on the host for the making.
    journal = str(tmp_path / "journal.img")
    r = make_volume(journal, "16M", ["-O", "journal_dev", "-b", "4096"], "fm-journal", env)
    assert r.returncode == 0, r.stderr
    loop = host(["losetup", "--find", "--show", journal]).stdout.strip()
    assert loop.startswith("/dev/loop"), "no loop device for the journal"

    made, table = [], {}
    try:
        for i, (name, opts, must) in enumerate(rows):
            label = f"fm{i:02d}"
            img = str(tmp_path / f"{label}.img")
            big = any(o in ("16384", "32768", "65536") for o in opts)
            opts = [f"device={loop}" if o == "device=JOURNAL" else o for o in opts]
            r = make_volume(img, "256M" if big else "48M", opts + ["-d", files], label, env)
            if r.returncode != 0:
                table[label] = (name, must, "mke2fs will not make it: " + (r.stderr.strip().splitlines() or ["?"])[-1])
                continue
            # A volume mke2fs itself left unclean is mended first, and the row says so.
            note = ""
            jopt = ["-j", journal] if name == EXTERNAL else []
            r = host([E2FSCK, "-fn"] + jopt + [img])
            if r.returncode != 0:
                first = next((x for x in r.stdout.splitlines() if "WARNING" in x or "inconsistent" in x or "?" in x),
                             "?")
                host([E2FSCK, "-fy"] + jopt + [img])
                note = f" (mke2fs -d left it unclean, mended by e2fsck -fy before the boot: {first.strip()})"
            made.append((label, name, must, img, note))
    finally:
        host(["losetup", "-d", loop])

    args = ["--direct", "--mem", "2048", "--disk", f"{journal},if=virtio-scsi,rw"]
    for _, _, _, img, _ in made:
        args += ["--disk", f"{img},if=virtio-scsi,rw"]
    g = guest("feature-matrix", args, boot_timeout=300)
    g.wait_shell()
    g.check(GUEST_ROW)
    kernel = g.check("uname -r").strip()
    out = {}
    for label, name, must, img, _ in made:
        ext = name == EXTERNAL
        line = g.check(f"row {label} {'journal_path=$(blkid -L fm-journal)' if ext else ''} "
                       f"{'-j$(blkid -L fm-journal)' if ext else ''}", timeout=120)
        m = re.search(r"ROW (\S+) (\S+) (\S+) (\S+) (\S+) (\[.*\])", " ".join(line.split()))
        assert m and m.group(1) == label, line
        out[label] = m
    assert g.poweroff() == 0
    g.assert_no_fatal()

    problems = []
    for label, name, must, img, note in made:
        m = out[label]
        read, wrote, fsck, why = m.group(2), m.group(3), int(m.group(4)), m.group(5).replace("_", " ")
        scan = json.loads(m.group(6))
        v = scan[0] if scan else {}
        jopt = ["-j", journal] if name == EXTERNAL else []
        hfsck = host([E2FSCK, "-fn"] + jopt + [img])
        # debugfs cat prints an inline-data file's whole inline area, NULs included.
        back = host([DEBUGFS, "-R", "cat /written", img]).stdout.strip("\0\n ")
        if v.get("kind") == "journal":
            table[label] = (name, must, "a journal device: the external-journal row uses one")
            continue
        steps = {"reads back": read == expect_sum, "writes": wrote == "ok", "e2fsck clean": fsck == 0,
                 "host e2fsck clean": hfsck.returncode == 0, "host reads the new file": back == f"written in {label}"}
        if all(steps.values()):
            ok = v.get("kernel_mount") == "rw"
            table[label] = (name, must, ("pass" if ok else f"pass, but extscan said {v.get('kernel_mount')}") + note)
            if not ok:
                problems.append(f"{name}: works, but extscan said {v.get('kernel_mount')}: {v.get('kernel_blocker')}")
            continue
        failed = ", ".join(k for k, good in steps.items() if not good)
        if v.get("kernel_mount") != "rw" and read == "fail" and not must:
            # Foretold: the kernel refuses it, and extscan said why.
            table[label] = (name, must, f"cannot pass: extscan: {v.get('kernel_blocker')}; kernel: {why}")
            continue
        table[label] = (name, must, f"FAIL ({failed}; kernel: {why})")
        problems.append(f"{name}: {failed} (read {read}, write {wrote}, e2fsck {fsck}, host e2fsck "
                        f"{hfsck.returncode}, kernel: {why}, extscan: {v.get('kernel_mount')})")

    passed = sum(1 for _, _, res in table.values() if res.startswith("pass"))
    failed = sum(1 for _, _, res in table.values() if res.startswith("FAIL"))
    lines = [f"feature matrix: mke2fs {host([MKE2FS, '-V']).stderr.split()[1]}, kernel {kernel}"]
    lines += [f"  {table[label][0]:<40} {table[label][2]}" for label in sorted(table)]
    lines.append(f"{passed} of {len(table)} rows pass, {len(table) - passed - failed} explained, {failed} fail")
    with open(os.path.join(OUT, "feature-matrix.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    must_missing = [n for n, must, res in table.values() if must and not res.startswith(("pass", "FAIL"))]
    assert not must_missing, f"rows that must pass did not: {must_missing}"
    assert not problems, "\n".join(problems)
