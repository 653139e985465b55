"""The machine's network: a NIC of any QEMU model on a user-mode network of
its own (--nic, --net), and a network boot from the first one (--netboot,
--tftp). build.py adds what these return."""
import os
import re

from .machine import qv
from .say import die


def nic_args(n, spec):
    """-netdev and -device values for --nic SPEC; forwarded ports listen on
    127.0.0.1 only."""
    model, *opts = spec.split(",")
    netdev, device = f"user,id=net{n}", f"{model},netdev=net{n}"
    for opt in opts:
        key, _, value = opt.partition("=")
        if key == "mac":
            device += f",mac={value}"
        elif key == "fwd" and re.fullmatch(r"\d+:\d+", value):
            hostport, guestport = value.split(":")
            netdev += f",hostfwd=tcp:127.0.0.1:{hostport}-:{guestport}"
        else:
            die(f"--nic {spec}: {opt} is not mac=MAC or fwd=HOSTPORT:GUESTPORT")
    return netdev, device


def netboot_args(o, netdev, device, m):
    """The first NIC boots: QEMU's DHCP names the boot file, its TFTP serves
    --tftp. On UEFI the firmware's own network stack is used (no option ROM);
    for an http:// boot file its PXE is turned off, as PXE is tried first."""
    if not os.path.isdir(o.tftp):
        die(f"{o.tftp} missing; run 'make netboot' first")
    if "," in o.netboot or "," in o.tftp:
        die("--netboot and --tftp take no commas (QEMU would read them as options)")
    netdev += f",tftp={qv(o.tftp)},bootfile={qv(o.netboot)}"
    device += ",bootindex=0"
    if o.firmware == "uefi":
        device += ",romfile="
        # edk2 2024.05 and later (Debian 13's OVMF) load their network stack
        # only with a random number source: RDRAND, which TCG's CPU lacks, or this.
        m.add("-device", "virtio-rng-pci")
        if o.netboot.startswith("http://"):
            for v in ("IPv4PXESupport", "IPv6PXESupport"):
                m.add("-fw_cfg", f"name=opt/org.tianocore/{v},string=n")
    return netdev, device
