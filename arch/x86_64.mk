# x86_64: what the build needs to know of the target architecture. Another
# architecture is another file like this one (EXTRESCUE_ARCH=NAME).
KERNEL_ARCH := x86_64
# The kernel image the boot loaders start, under the kernel's build folder.
KERNEL_IMAGE := arch/x86/boot/bzImage
# configure's --host for the musl builds.
GNU_TRIPLET := x86_64-linux-musl
# ... and for the C++ programs, which link glibc statically.
GNU_TRIPLET_GLIBC := x86_64-linux-gnu
# readelf's name for the machine: every ELF file in the image must say it.
ELF_MACHINE := Advanced Micro Devices X86-64
# Debian's name for it: binary pins are package/NAME/NAME.lock.DEBIAN_ARCH.
DEBIAN_ARCH := amd64
# The prefix of the target's gcc and binutils. Empty: the build machine's
# own are x86_64's (an arm64 build sets aarch64-linux-gnu-).
TARGET_CROSS :=
# UEFI's name for it: the removable-media loader is BOOT$(EFI_ARCH_UPPER).EFI,
# shim, MokManager and systemd-boot's files end in it.
EFI_ARCH := x64
EFI_ARCH_UPPER := X64
# The host packages this architecture adds to configs/host-packages (none:
# the build machine's compilers are x86_64's).
HOST_PACKAGES_ARCH :=
# How the tests run its programs on the build machine: directly.
TARGET_RUN :=
# BIOS boot (isolinux on CD and stick, pxelinux over the network) besides
# UEFI: a PC's firmware may have either.
BIOS_BOOT := yes
# The network boot folder under out/ARCH/ and in its tar: the top of the
# served tree (arm64's goes below it, netboot/arm64/).
NETBOOT_PATH := netboot
# The UEFI boot menu's entries (systemd-boot): the consoles a PC has.
LOADER_ENTRIES_DIR := iso/loader/entries
