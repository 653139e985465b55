"""The code of qemu/run and qemu/smoke, one job a file; the two scripts only
put this folder's parent on sys.path and call main(). Where to look:

  cli.py          qemu/run's options and main(), in named steps
  build.py        the machine from the options: machine type, boot medium,
                  disks, passed PCI devices, NICs, consoles
  machine.py      the QEMU command line being built, a disk's -drive and
                  its overlay; qv() quotes a value for QEMU
  controllers.py  the table of disk controllers: adapter and disk devices
  diskspec.py     --disk PATH,...: parsed, checked, its mode in words
  firmware.py     UEFI code and variable store, Secure Boot, --mok
  network.py      --nic and --netboot
  hostdisk.py     host block devices and whether the host uses them
  vfio.py         PCI passthrough that gives the devices back
  arches.py       what differs between x86_64 and arm64 machines
  tree.py         where the build puts kernel, initramfs and ISO
  say.py          the one-line messages, prefixed with the command
  smoke.py        qemu/smoke's options and main(); with views.py (the
                  host's side of each disk), guest.py (the boot with the
                  battery on), verdicts.py (the checks) and oops.py (the
                  guest kernel's oops in one line)

The tests import some parts directly (tests/conftest.py puts qemu/ on
sys.path): verdicts, views, diskspec, oops."""
