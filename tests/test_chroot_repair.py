"""The boot loader reinstalled from rescue-chroot: /dev (with /dev/pts),
/proc, /sys and /run bound recursively, efivarfs under UEFI (writable only
when the root is), so grub-install and efibootmgr work inside, and
rescue-mount --umount undoes all of it."""
import os
import shutil
import subprocess

from harness import OUT

SFDISK = os.path.join(OUT, "build", "util-linux-root", "sbin", "sfdisk")
BUSYBOX = os.path.join(OUT, "build", "busybox", "busybox")


def root_tree(tmp_path, programs=()):
    """A small root: busybox, the host's PROGRAMS with the libraries they load."""
    root = tmp_path / "tree"
    for d in ("bin", "usr/sbin", "etc", "dev", "proc", "sys", "run", "tmp"):
        (root / d).mkdir(parents=True, exist_ok=True)
    shutil.copy(BUSYBOX, root / "bin" / "busybox")
    for applet in ("sh", "mountpoint", "cat"):
        os.symlink("busybox", root / "bin" / applet)
    for prog in programs:
        files = [prog] + [line.split()[-2] if "=>" in line else line.split()[0]
                          for line in subprocess.run(["ldd", prog], capture_output=True, text=True).stdout.splitlines()
                          if "/" in line]
        for f in files:
            dest = root / f.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, dest)
    return root


def gpt_disk(tmp_path, tree, label):
    """A GPT disk whose first partition (from 1 MiB) holds an ext4 made from TREE."""
    img = str(tmp_path / f"{label}.img")
    subprocess.run(["truncate", "-s", "96M", img], check=True)
    subprocess.run([SFDISK, "-q", img], input="label: gpt\n2048,,L\n", text=True, check=True)
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-L", label, "-d", str(tree), "-E", "offset=1048576",
                    img, f"{(96 - 2) * 1024}k"], check=True)
    return img


def test_efibootmgr_in_the_chroot_writes_a_boot_entry(guest, tmp_path):
    tree = root_tree(tmp_path, ["/usr/bin/efibootmgr"])
    img = gpt_disk(tmp_path, tree, "xrefiroot")
    efivars = str(tmp_path / "vars.fd")
    args = ["--direct", "--firmware", "uefi", "--efivars", efivars, "--append", "console=ttyS0,115200n8",
            "--disk", f"{img},if=virtio-blk,rw"]
    g = guest("chroot-uefi", args, boot_timeout=180)
    g.wait_shell()
    entry = "-c -d /dev/vda -p 1 -L xrtest -l '\\EFI\\xr\\grubx64.efi'"
    # Read-only root: efivarfs is read-only too, so no entry can be written.
    g.check("rescue-mount /dev/vda1")
    assert g.run(f"rescue-chroot /usr/bin/efibootmgr {entry}")[0] != 0, "efivarfs was writable in a read-only session"
    g.check("rescue-mount --umount")
    g.check("rescue-mount --rw /dev/vda1")
    out = g.check(f"rescue-chroot /usr/bin/efibootmgr {entry}", timeout=120)
    assert "xrtest" in out, out
    g.check("rescue-mount --umount")
    assert "/mnt/root" not in g.check("cat /proc/mounts")
    assert g.poweroff("poweroff") == 0
    g.assert_no_fatal()
    with open(efivars, "rb") as f:
        assert "xrtest".encode("utf-16-le") in f.read(), "the boot entry is not in the firmware's variables"

    # After a reboot the firmware still lists it.
    g = guest("chroot-uefi-again", args, boot_timeout=180)
    g.wait_shell()
    found = g.check("mount -t efivarfs efivarfs /sys/firmware/efi/efivars && "
                    "cat /sys/firmware/efi/efivars/Boot0* | tr -d '\\000' | grep -c xrtest")
    assert int(found.strip()) >= 1, found
    assert g.poweroff() == 0


def test_grub_install_stand_in_finds_pts_and_disks(guest, tmp_path):
    tree = root_tree(tmp_path)
    (tree / "usr" / "sbin" / "grub-install").write_text(
        "#!/bin/sh\n"
        "# What grub-install needs of the chroot: a pty, the disk's node, the pseudo filesystems.\n"
        "[ -c /dev/pts/ptmx ] || { echo 'grub-install: no /dev/pts' >&2; exit 1; }\n"
        "[ -b \"$1\" ] || { echo \"grub-install: no $1\" >&2; exit 1; }\n"
        "for m in /proc /sys /run /dev /dev/pts; do mountpoint -q $m || { echo \"grub-install: $m\" >&2; exit 1; }; done\n"
        "echo 'Installation finished. No error reported.'\n")
    (tree / "usr" / "sbin" / "grub-install").chmod(0o755)
    img = gpt_disk(tmp_path, tree, "xrbiosroot")
    g = guest("chroot-bios", ["--direct", "--disk", f"{img},if=virtio-blk,rw"])
    g.wait_shell()
    g.check("rescue-mount --rw /dev/vda1")
    assert "No error reported" in g.check("rescue-chroot /bin/sh /usr/sbin/grub-install /dev/vda")
    g.check("rescue-mount --umount")
    assert "/mnt/root" not in g.check("cat /proc/mounts")
    assert g.poweroff() == 0
