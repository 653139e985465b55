"""The disk controllers of --disk PATH,if=NAME, in one table: for each, the
host adapter a disk on it hangs off (one adapter per kind, made with its
first disk), the -device values of the disk itself, and what the model
cannot do. machine.py attaches a disk by looking its controller up here,
diskspec.py checks a spec against it; tests/test_controllers.py boots each."""
from typing import NamedTuple, Optional, Tuple


class Controller(NamedTuple):
    # (kind, QEMU device) of the adapter; the kind names its id (virtioscsi0),
    # so two controllers of one kind share it. None: the disk device is all.
    adapter: Optional[Tuple[str, str]]
    # The disk's -device values: {drive}, {serial} and {extra} (bootindex,
    # sector sizes) of the disk, {bus} the adapter's id, {slot} how many disks
    # of this controller came before, {n} the disk's number.
    devices: Tuple[str, ...]
    # QEMU's model refuses a read-only drive ("Block node is read-only"):
    # there ro becomes discard, a throw-away overlay taking the writes.
    readonly: bool = True
    # The host disk's sector sizes are given on (a 4Kn drive stays 4Kn).
    sizes: bool = True
    # (disks it takes at most, the refusal of one more), or None.
    limit: Optional[Tuple[int, str]] = None
    # SCSI passthrough: the guest's commands reach the host's SCSI device,
    # which so cannot be read-only.
    passthrough: bool = False


SCSI_HBAS = {
    "virtio-scsi": "virtio-scsi-pci", "lsi53c895a": "lsi53c895a",
    "lsi53c810": "lsi53c810", "megasas": "megasas", "megasas-gen2": "megasas-gen2",
    "mptsas1068": "mptsas1068", "pvscsi": "pvscsi", "am53c974": "am53c974",
    "dc390": "dc390",
}
USB_HCDS = {"usb-xhci": "qemu-xhci", "usb-ehci": "usb-ehci",
            "usb-uhci": "piix3-usb-uhci", "usb-ohci": "pci-ohci"}
SCSI_HD = "scsi-hd,drive={drive},bus={bus}.0,serial={serial}{extra}"

CONTROLLERS = {
    "virtio-blk": Controller(None, ("virtio-blk-pci,drive={drive},serial={serial}{extra}",)),
    "nvme": Controller(None, ("nvme,drive={drive},serial={serial}{extra}",)),
    # Each disk on the next port of the one AHCI adapter.
    "ahci": Controller(("ahci", "ahci"), ("ide-hd,drive={drive},bus={bus}.{slot},serial={serial}{extra}",),
                       readonly=False),
    "ide": Controller(None, ("ide-hd,drive={drive},bus=ide.0,unit={slot},serial={serial}{extra}",), readonly=False,
                      limit=(2, "only two disks fit on the IDE primary channel (the CD uses the secondary)")),
    **{name: Controller((name, dev), (SCSI_HD,)) for name, dev in SCSI_HBAS.items()},
    **{name: Controller((name, dev), ("usb-storage,drive={drive},bus={bus}.0,serial={serial}{extra}",))
       for name, dev in USB_HCDS.items()},
    # USB Attached SCSI: a UAS device of its own on the xHCI adapter, the disk behind it.
    "usb-uas": Controller(("usb-xhci", "qemu-xhci"), (
        "usb-uas,id=uas{n},bus={bus}.0", "scsi-hd,drive={drive},bus=uas{n}.0,scsi-id=0,lun=0,serial={serial}{extra}")),
    # The controller's bus is always called "sd-bus": one card per run.
    "sdhci": Controller(None, ("sdhci-pci", "sd-card,drive={drive},bus=sd-bus"), readonly=False, sizes=False,
                        limit=(1, "only one --disk fits on the SD card controller")),
    # The device's own identity (serial, vendor, model) comes through. On
    # virtio-scsi unless the spec's hba= names another of PASS_HBAS.
    "scsi-block": Controller(("virtio-scsi", "virtio-scsi-pci"), ("scsi-block,drive={drive},bus={bus}.0{extra}",),
                             passthrough=True),
    "scsi-generic": Controller(("virtio-scsi", "virtio-scsi-pci"), ("scsi-generic,drive={drive},bus={bus}.0",),
                               sizes=False, passthrough=True),
}
# The adapters a passed SCSI device may hang off instead (hba=).
PASS_HBAS = ("virtio-scsi", "megasas", "megasas-gen2", "lsi53c895a")
SCSI_PASS = {name for name, c in CONTROLLERS.items() if c.passthrough}
NO_READONLY = {name for name, c in CONTROLLERS.items() if not c.readonly}


def adapter_of(d):
    """(kind, QEMU device) of the adapter disk D (a parsed spec) hangs off, or None."""
    if d["hba"]:
        return CONTROLLERS[d["hba"]].adapter
    return CONTROLLERS[d["if"]].adapter
