"""The machine qemu/run starts, from its settled options (cli.settle), one
step a function in the order of the command line: machine type and CPU,
firmware, boot medium, disks, passed PCI devices, NICs, consoles. Each
step may refuse, and refusals come in that order. cli.main() calls build()."""
import os

from . import hostdisk, vfio
from .controllers import SCSI_PASS
from .diskspec import check_host_disk, mib, mode_text, parse_disk
from .firmware import firmware_args
from .machine import Machine, qv
from .network import netboot_args, nic_args
from .say import die, say
from .tree import default_iso

# Under TCG the host may not run the emulated CPU for most of the ~76 ms the
# kernel's IO-APIC timer check waits, and the check then panics ("IO-APIC +
# timer doesn't work!"): 2 direct boots in 226, six guests on two cores. KVM,
# Hyper-V and VMware guests skip the check (the kernel sets no_timer_check).
TCG_APPEND = "no_timer_check"


def build(o):
    """(the Machine, its parsed disks, the PCI passthrough plan) for options O."""
    m = Machine()
    machine = machine_type(o, m)
    if o.firmware == "uefi" and not o.no_firmware:
        firmware_args(o, m)
    boot_medium(o, m)
    disks = add_disks(o, m, machine)
    plan = add_pci(o, m)
    add_nics(o, m)
    add_consoles(o, m)
    m.add(*o.extra)
    return m, disks, plan


def machine_type(o, m):
    """QEMU, its machine, memory, CPUs and accelerator; returns the machine."""
    if o.arch == "x86_64":
        # The Secure Boot build of OVMF keeps its variables behind SMM, which
        # needs q35; a passed PCIe device needs q35's extended config space.
        machine = "q35,smm=on" if o.secureboot else "q35" if o.pci else "pc"
        m.add("qemu-system-x86_64", "-machine", machine, "-nodefaults", "-no-reboot",
              "-m", str(o.mem), "-smp", str(o.smp), "-vga", "std")
    else:
        # virt: PCIe (ECAM), a PL011 UART, no IDE and no VGA. TCG runs a
        # Cortex-A72 unless --cpu names another (max emulates pointer
        # authentication, which costs TCG much time for nothing we need).
        machine = "virt"
        m.add("qemu-system-aarch64", "-machine", machine, "-nodefaults", "-no-reboot",
              "-m", str(o.mem), "-smp", str(o.smp))
        if not o.cpu:
            o.cpu = "host" if o.kvm else "cortex-a72"
    m.add("-accel", "kvm" if o.kvm else "tcg")
    if o.cpu:
        m.add("-cpu", o.cpu)
    return machine


def direct_append(o):
    """The kernel command line of a direct boot: --append, plus TCG_APPEND under
    TCG on x86_64 (an arm64 kernel has no such check and no such parameter)."""
    if o.kvm or o.arch != "x86_64" or TCG_APPEND in o.append.split():
        return o.append
    return f"{o.append} {TCG_APPEND}"


def boot_medium(o, m):
    """What boots: the network (no medium), --own-disk's first disk, the
    kernel directly, or the ISO as a CD, a USB stick or a hard disk."""
    if o.netboot:
        return      # the first NIC boots (add_nics)
    if o.own_disk:
        if not o.disk:
            die("--own-disk boots the first --disk; give one")
        return
    if o.direct:
        for f in (o.kernel, o.initrd):
            if not os.path.exists(f):
                die(f"{f} missing; run 'make' first")
        m.add("-kernel", o.kernel, "-initrd", o.initrd, "-append", direct_append(o))
        return
    iso = o.iso or default_iso(o.arch)
    if not os.path.exists(iso):
        die(f"{iso} does not exist")
    if o.medium == "cd" and o.arch != "x86_64":
        # virt has no IDE: the CD drive sits on a SCSI adapter, as a
        # server's virtual media (BMC) shows up on USB or SCSI.
        m.add("-device", "virtio-scsi-pci,id=bootscsi",
              "-drive", f"if=none,id=boot,file={qv(iso)},media=cdrom,readonly=on",
              "-device", "scsi-cd,drive=boot,bus=bootscsi.0,bootindex=0")
    elif o.medium == "cd":
        m.add("-drive", f"if=none,id=boot,file={qv(iso)},media=cdrom,readonly=on",
              "-device", "ide-cd,drive=boot,bus=ide.1,unit=0,bootindex=0")
    elif o.medium == "usb":
        m.add("-device", "qemu-xhci,id=bootusb",
              "-drive", f"if=none,id=boot,file={qv(iso)},format=raw,readonly=on",
              "-device", "usb-storage,drive=boot,bus=bootusb.0,removable=on,bootindex=0")
    else:
        m.add("-drive", f"if=none,id=boot,file={qv(iso)},format=raw,readonly=on",
              "-device", "virtio-blk-pci,drive=boot,bootindex=0")


def add_disks(o, m, machine):
    """Every --disk, each spec parsed before any is attached, checked
    against the host and told in one line; returns the parsed disks."""
    disks = [parse_disk(spec) for spec in o.disk]
    for n, d in enumerate(disks):
        if o.rw and d["if"] not in SCSI_PASS:
            d["mode"] = d["asked"] = "rw"
        check_host_disk(d, o.force_in_use, o.force_rw_scsi)
        if d["if"] == "ide" and machine != "pc":
            die(f"if=ide is the pc machine's IDE channel; on {machine} use if=ahci")
        m.disk(n, d, boot=o.own_disk and n == 0)
        say(f"disk {n}: {d['path']} on {d['if']}, {mode_text(d)}, {mib(hostdisk.size_of(d['path']))}, "
            f"serial {d['serial'] if d['if'] != 'scsi-generic' else 'from the device'}")
    return disks


def add_pci(o, m):
    """The --pci devices, each on a root port of its own; returns vfio's plan."""
    try:
        plan = vfio.plan(o.pci) if o.pci else []
    except vfio.VfioError as e:
        die(str(e))
    for n, (bdf, *_) in enumerate(plan):
        # A root port each: the device sits on PCIe as on the host.
        m.add("-device", f"pcie-root-port,id=vfioport{n},chassis={n + 1},slot={n + 1}",
              "-device", f"vfio-pci,host={bdf},bus=vfioport{n}")
    if plan and not o.kvm:
        say("note: under TCG a passed device works but every access to it is emulated and slow; "
            "add --kvm on a host where KVM works")
    return plan


def add_nics(o, m):
    nics = o.nic + (["virtio-net-pci"] if o.net or (o.netboot and not o.nic) else [])
    for n, spec in enumerate(nics):
        netdev, device = nic_args(n, spec)
        if o.netboot and n == 0:
            netdev, device = netboot_args(o, netdev, device, m)
        m.add("-netdev", netdev, "-device", device)
    if not nics:
        m.add("-nic", "none")


def add_consoles(o, m):
    """The serial console on stdio (with QEMU's monitor), and the further
    consoles of the console tests, on sockets QEMU listens on."""
    chardev = "stdio,id=con,mux=on,signal=off"
    if o.serial_log:
        chardev += f",logfile={qv(o.serial_log)}"
    m.add("-chardev", chardev, "-serial", "chardev:con", "-mon", "chardev=con,mode=readline")
    if o.serial2:
        m.add("-chardev", f"socket,id=com2,path={qv(o.serial2)},server=on,wait=off", "-serial", "chardev:com2")
    if o.virtcon:
        m.add("-device", "virtio-serial-pci,id=vser",
              "-chardev", f"socket,id=hvc,path={qv(o.virtcon)},server=on,wait=off",
              "-device", "virtconsole,chardev=hvc,bus=vser.0")
    if not o.gui:
        m.add("-display", "none")
