"""qemu/run's command line: the options, their defaults and refusals
(settle), then the machine (build.py), then QEMU run or, with --dry-run,
its command printed. qemu/run calls main(); make run, the tests and
qemu/smoke start qemu/run."""
import argparse
import os
import shlex
import sys

from . import vfio
from .arches import ARCHES
from .build import build
from .controllers import CONTROLLERS
from .diskspec import new_write_log
from .say import die
from .tree import ARCH, out_dir

DESCRIPTION = """Boots an extrescue image in QEMU: the one runner for `make run` and the tests.

Firmware (BIOS or UEFI), boot medium (CD, USB stick, hard disk) or a direct
kernel boot, extra disks on any emulated controller, raw host block devices
read-only unless asked otherwise. TCG by default (KVM on request).
"""


def main():
    o = parser().parse_args()
    if o.vfio_restore:
        sys.exit(vfio.restore_left())
    settle(o)
    m, disks, plan = build(o)
    if o.dry_run:
        for bdf, drv, _ in plan:
            print(f"# would bind {bdf} (now {drv or 'no driver'}) to vfio-pci, and back afterwards")
        print(shlex.join(m.args))
        return
    run(m.args, disks, plan)


def parser():
    ap = argparse.ArgumentParser(prog="qemu/run", description=DESCRIPTION,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    boot_options(ap)
    disk_options(ap)
    machine_options(ap)
    device_options(ap)
    ap.add_argument("--dry-run", action="store_true", help="print the QEMU command and exit")
    ap.add_argument("extra", nargs="*", help="further QEMU arguments after --")
    return ap


def boot_options(ap):
    ap.add_argument("--arch", choices=sorted(ARCHES), default=ARCH if ARCH in ARCHES else "x86_64",
                    help="the machine: x86_64 (pc, q35) or arm64 (virt, UEFI only); default $EXTRESCUE_ARCH or x86_64")
    ap.add_argument("--firmware", choices=["bios", "uefi"], default=None,
                    help="default: bios on x86_64, uefi on arm64 (which has no BIOS)")
    ap.add_argument("--medium", choices=["cd", "usb", "disk"], default="cd",
                    help="how the ISO is attached (disk = written to a hard disk)")
    ap.add_argument("--iso", help="image to boot (default: newest extrescue-*-ARCH.iso in out/ARCH)")
    ap.add_argument("--direct", action="store_true",
                    help="boot kernel and initramfs directly, without firmware menus")
    ap.add_argument("--netboot", metavar="BOOTFILE",
                    help="boot from the network: the firmware gets BOOTFILE by DHCP on the first NIC (a path "
                         "in --tftp's folder, e.g. pxelinux.0 or extrescue.efi, or an http://10.0.2.2:PORT/ URL)")
    ap.add_argument("--tftp", metavar="DIR", default=None,
                    help="folder QEMU serves by TFTP with --netboot (default: ARCH's netboot folder)")
    ap.add_argument("--own-disk", action="store_true",
                    help="no rescue image: boot the first --disk itself (a server's own disk), with its firmware")
    ap.add_argument("--kernel", help="default: the kernel the build made for ARCH")
    ap.add_argument("--initrd", help="default: out/ARCH/initramfs.cpio.zst")
    ap.add_argument("--append", help="kernel command line for --direct (default: console=ttyS0,115200n8, "
                                     "on arm64 console=ttyAMA0,115200n8)")


def disk_options(ap):
    ap.add_argument("--disk", action="append", default=[], metavar="PATH[,if=CTRL][,mode=ro|rw|discard]...",
                    help="extra disk, read-only unless mode=rw (or rw) or mode=discard (writes go to a "
                         f"throw-away overlay, or to overlay=FILE.qcow2); CTRL: {', '.join(CONTROLLERS)}")
    ap.add_argument("--rw", action="store_true", help="make every --disk writable")
    ap.add_argument("--force-in-use", action="store_true",
                    help="attach a host disk the host is using (mounted, swap, md/dm), read-only or discard only")
    ap.add_argument("--force-rw-scsi", action="store_true",
                    help="pass a SCSI generic device (if=scsi-generic), which cannot be read-only, read-write")


def machine_options(ap):
    ap.add_argument("--mem", type=int, default=1024, help="MiB of RAM (default 1024)")
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--cpu", help="QEMU -cpu model (default: QEMU's)")
    ap.add_argument("--serial-log", help="also write the serial console to this file")
    ap.add_argument("--serial2", metavar="SOCKET",
                    help="a second serial port (COM2, ttyS1) on this unix socket (QEMU listens)")
    ap.add_argument("--virtcon", metavar="SOCKET",
                    help="a virtio console (hvc0) on this unix socket (QEMU listens)")
    ap.add_argument("--efivars", metavar="FILE",
                    help="UEFI: keep the variable store in FILE (made from OVMF's on first use), "
                         "so boot entries survive a reboot")
    ap.add_argument("--secureboot", action="store_true",
                    help="UEFI with Secure Boot on and Microsoft's keys (OVMF's secboot build, q35 with SMM)")
    ap.add_argument("--mok", metavar="CERT",
                    help="with --secureboot: enroll CERT (DER, e.g. out/x86_64/extrescue-mok.cer) as a Machine Owner Key "
                         "in a fresh variable store (--efivars FILE keeps it), as mokutil --import would")
    ap.add_argument("--gui", action="store_true", help="show the VGA screen in a window")
    ap.add_argument("--kvm", action="store_true", help="use KVM (broken on the build machines)")


def device_options(ap):
    ap.add_argument("--net", action="store_true", help="user-mode network on virtio-net (= --nic virtio-net-pci)")
    ap.add_argument("--nic", action="append", default=[], metavar="MODEL[,mac=MAC][,fwd=HOSTPORT:GUESTPORT]...",
                    help="a NIC of QEMU model MODEL (virtio-net-pci, e1000e, e1000, vmxnet3, ...) on its own "
                         "user-mode network (guest 10.0.2.15, host 10.0.2.2); fwd= forwards 127.0.0.1:HOSTPORT")
    ap.add_argument("--pci", action="append", default=[], metavar="BDF",
                    help="pass a host PCI device through with VFIO (needs an IOMMU); it is given back "
                         "to its driver on every way out")
    ap.add_argument("--vfio-restore", action="store_true",
                    help="give back the PCI devices a killed runner left on vfio-pci, and exit")


def settle(o):
    """The defaults that depend on the architecture, and the refusals of
    options that cannot go together. o.firmware ends up bios or uefi;
    o.no_firmware marks a direct boot on virt, which starts the kernel itself."""
    arch = ARCHES[o.arch]
    out = out_dir(o.arch)
    if o.arch != "x86_64" and o.firmware == "bios":
        die(f"{o.arch} has no BIOS: use --firmware uefi")
    firmware = o.firmware or ("bios" if o.arch == "x86_64" else "none" if o.direct else "uefi")
    if firmware == "none" and (o.secureboot or o.mok or o.efivars):
        die(f"a direct boot on {o.arch} has no firmware: --secureboot, --mok and --efivars need --firmware uefi")
    o.no_firmware = firmware == "none"
    o.firmware = "uefi" if firmware == "none" else firmware
    o.kernel = o.kernel or os.path.join(out, arch["kernel"])
    o.initrd = o.initrd or os.path.join(out, "initramfs.cpio.zst")
    if o.append is None:    # an empty --append is a command line of its own
        o.append = f"console={arch['console']},115200n8"
    o.tftp = o.tftp or os.path.join(out, "netboot" if o.arch == "x86_64" else f"netboot/{o.arch}")
    if (o.secureboot or o.mok) and o.firmware != "uefi":
        die("--secureboot and --mok need --firmware uefi")
    if o.mok and not o.secureboot:
        die("--mok enrolls into the Secure Boot variable store; add --secureboot")


def run(args, disks, plan):
    """QEMU (ARGS) in this process's place, or under vfio.run() when PCI
    devices are passed (PLAN), which gives them back whatever happens."""
    args[0] = os.environ.get("EXTRESCUE_QEMU", args[0])     # tests: a stand-in QEMU
    for d in disks:
        if d["logwrites"]:
            new_write_log(d["logwrites"])
    if not plan:
        os.execvp(args[0], args)
    if not os.path.exists(os.path.join(vfio.dev_vfio(), "vfio")):
        die(f"{vfio.dev_vfio()}/vfio missing; load the vfio-pci module (modprobe vfio-pci)")
    sys.exit(vfio.run(plan, args))
