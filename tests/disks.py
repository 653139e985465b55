"""Test disk images made on the host with known contents, and host-side checks."""
import contextlib
import hashlib
import os
import subprocess

from harness import host


def tree(root, files=40):
    """Writes FILES files of varied sizes under ROOT; returns {relative path: sha256}."""
    sums = {}
    for i in range(files):
        sub = os.path.join(root, f"dir{i % 4}")
        os.makedirs(sub, exist_ok=True)
        data = hashlib.sha256(str(i).encode()).digest() * (1 + (i * 997) % 4000)
        path = os.path.join(sub, f"file{i:03d}")
        with open(path, "wb") as f:
            f.write(data)
        sums[os.path.relpath(path, root)] = hashlib.sha256(data).hexdigest()
    with open(os.path.join(root, "SHA256SUMS"), "w") as f:
        for rel, s in sorted(sums.items()):
            f.write(f"{s}  {rel}\n")
    return sums


def blank(img, size):
    """A sparse, all-zero image of SIZE (truncate's units); returns its path."""
    subprocess.run(["truncate", "-s", "0", img], check=True)
    subprocess.run(["truncate", "-s", size, img], check=True)
    return img


def make_fs(img, size, fstype="ext4", label="xrdata", options=(), populate=None):
    """mke2fs IMG of SIZE with a known tree in it (made in POPULATE or a temp dir)."""
    subprocess.run(["truncate", "-s", size, img], check=True)
    cmd = ["mke2fs", "-q", "-F", "-t", fstype, "-L", label] + list(options)
    if populate:
        cmd += ["-d", populate]
    subprocess.run(cmd + [img], check=True)


def tree_fs(d, size, options=()):
    """D/ext4.img of SIZE holding the known tree (written to D/tree); returns its path."""
    src = os.path.join(d, "tree")
    os.mkdir(src)
    tree(src)
    img = os.path.join(d, "ext4.img")
    make_fs(img, size, populate=src, options=options)
    return img


def fsck_clean(img):
    r = host(["e2fsck", "-fn", img])
    assert r.returncode == 0, f"host e2fsck -fn {img} exited {r.returncode}: {r.stdout}{r.stderr}"


def cat(img, path):
    """A file's contents, read from the image on the host with debugfs."""
    r = subprocess.run(["debugfs", "-R", f"cat {path}", img], capture_output=True)
    return r.stdout


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


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


@contextlib.contextmanager
def loop_device(img):
    """A host loop device over IMG (a real block device, as a spare disk
    would be), detached afterwards."""
    dev = host(["losetup", "-f", "--show", img]).stdout.strip()
    assert dev, "losetup failed: the host needs loop device support"
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev])


def committed_writes(mnt):
    """Shell that writes what a power cut must not lose to the volume on MNT:
    file1..file8 ("committed-N") and 8 MiB of random data with its md5sum
    (big, big.md5), then syncs."""
    return (f"for i in 1 2 3 4 5 6 7 8; do echo committed-$i > {mnt}/file$i; done && "
            f"dd if=/dev/urandom of={mnt}/big bs=1M count=8 2>/dev/null && (cd {mnt} && md5sum big > big.md5) && sync")
