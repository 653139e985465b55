"""The middle guest (L1) of the VFIO tests: Debian 12's kernel on a q35
machine with QEMU's emulated Intel IOMMU (interrupt remapping on, caching
mode for the VFIO of a guest), booted under TCG with the host's root
read-only over 9p (tests/vfio/l1-init). Its controllers are QEMU's own,
each with a disk image of this host behind it, so that L1's vfio-pci can
hand one to this tree's qemu/run and qemu/smoke, whose guest (L2) is our
image. The layout is fixed, so a test knows every address:

  00:01.0  virtio-9p, the host's root (tag hostroot)
  00:02.0  the controller under test (CONTROLLERS), its disk behind it
  00:06.0  virtio-blk, L1's own disk (an ext4 a test mounts)      with_own_disk
  00:07.0  a PCIe-to-PCI bridge: one IOMMU group for itself and   with_shared_group
  01:01.0  a second megasas with a disk, and
  01:02.0  a virtio-blk L1 uses (bound to virtio-pci)
"""
import os
import shutil
import time

import pexpect

from harness import LOGS, OUT, TOP, Shell, scaled

L1_DIR = os.path.join(OUT, "build", "vfio-l1")
KERNEL = os.path.join(L1_DIR, "vmlinuz")
INITRD = os.path.join(L1_DIR, "initramfs.cpio.gz")
# The controller under test, the passed device; L1's own disk; the bridge's group.
BDF = "0000:00:02.0"
OWN_DISK_BDF = "0000:00:06.0"
GROUP_BDF, GROUP_OTHER = "0000:01:01.0", "0000:01:02.0"
# QEMU's device for each controller of the matrix and how a disk hangs on it;
# L1's driver of it (the one it must be given back to).
CONTROLLERS = {
    "megasas": ("megaraid_sas", "-device megasas,id=hba,addr=0x2 -device scsi-hd,drive=d0,bus=hba.0,serial={serial}"),
    "lsi53c895a": ("sym53c8xx", "-device lsi53c895a,id=hba,addr=0x2 -device scsi-hd,drive=d0,bus=hba.0,serial={serial}"),
    "nvme": ("nvme", "-device nvme,addr=0x2,drive=d0,serial={serial}"),
    "ahci": ("ahci", "-device ahci,id=hba,addr=0x2 -device ide-hd,drive=d0,bus=hba.0,serial={serial}"),
}
MEM_MIB = 2560


# tests/vfio/l1-init lays RAM over these in L1, hiding what the host has there.
COVERED = ("/run", "/tmp", "/var/tmp")


def built():
    """Why L1 cannot boot, or cannot see this tree, or None."""
    for f in (KERNEL, INITRD):
        if not os.path.exists(f):
            return f"{f} missing: run make test (it builds the VFIO tests' L1 from the linux-l1 pin)"
    for path in (TOP, OUT):
        real = os.path.realpath(path)
        for d in COVERED:
            if real == d or real.startswith(d + "/"):
                return f"{path} is under {d}, which the VFIO tests' L1 covers with RAM: check the tree out elsewhere"
    return None


def qemu_args(controller, disk, serial, own_disk=None, group_disk=None, group_other=None):
    """QEMU's arguments for an L1 with CONTROLLER (a key of CONTROLLERS) at
    00:02.0 and DISK behind it; OWN_DISK at 00:06.0, and the bridge's group
    with GROUP_DISK and GROUP_OTHER, when given."""
    a = ["-M", "q35,kernel-irqchip=split", "-accel", "tcg", "-m", str(MEM_MIB), "-smp", "1",
         "-nodefaults", "-display", "none", "-no-reboot",
         # First, so that every PCI device after it is behind it.
         "-device", "intel-iommu,intremap=on,caching-mode=on",
         "-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
         "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot,addr=0x1",
         "-drive", f"if=none,id=d0,file={disk},format=raw,cache=unsafe"]
    a += CONTROLLERS[controller][1].format(serial=serial).split()
    if own_disk:
        a += ["-drive", f"if=none,id=own,file={own_disk},format=raw",
              "-device", "virtio-blk-pci,drive=own,serial=l1own,addr=0x6"]
    if group_disk:
        a += ["-device", "pcie-pci-bridge,id=pb,addr=0x7",
              "-drive", f"if=none,id=g0,file={group_disk},format=raw",
              "-device", "megasas,id=ghba,bus=pb,addr=0x1", "-device", "scsi-hd,drive=g0,bus=ghba.0",
              "-drive", f"if=none,id=g1,file={group_other},format=raw",
              "-device", "virtio-blk-pci,drive=g1,bus=pb,addr=0x2"]
    return a


class L1(Shell):
    """One boot of the middle guest, driven over its serial console."""

    def __init__(self, name, args, boot_timeout=120):
        os.makedirs(LOGS, exist_ok=True)
        self.name = name
        self.log_path = os.path.join(LOGS, f"{name}.log")
        self.boot_timeout = boot_timeout
        self.seq = 0
        qemu = shutil.which("qemu-system-x86_64")
        self.cmd = [qemu] + args + [
            "-kernel", KERNEL, "-initrd", INITRD,
            "-append", "console=ttyS0,115200n8 intel_iommu=on iommu=pt panic=-1 quiet",
            "-chardev", f"stdio,id=con,signal=off,logfile={self.log_path}", "-serial", "chardev:con"]
        self.started = None
        self.child = None

    def start(self):
        if os.path.exists(self.log_path):
            os.unlink(self.log_path)
        self.started = time.monotonic()
        self.child = pexpect.spawn(self.cmd[0], self.cmd[1:], encoding="utf-8", codec_errors="replace",
                                   timeout=scaled(60))
        return self

    def kill(self):
        if self.child and self.child.isalive():
            self.child.terminate(force=True)

    def poweroff(self):
        self.send_command("poweroff -f")
        self.expect([pexpect.EOF], scaled(60), "L1 to power off")
        self.child.close()
