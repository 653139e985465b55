# arm64 (AArch64): cross-built on the x86_64 build machine with Debian's
# cross compilers (configs/host-packages-arm64). Servers of this kind boot
# UEFI only.
KERNEL_ARCH := arm64
KERNEL_IMAGE := arch/arm64/boot/Image
GNU_TRIPLET := aarch64-linux-musl
GNU_TRIPLET_GLIBC := aarch64-linux-gnu
ELF_MACHINE := AArch64
DEBIAN_ARCH := arm64
TARGET_CROSS := aarch64-linux-gnu-
EFI_ARCH := aa64
EFI_ARCH_UPPER := AA64
# The host packages this architecture adds to configs/host-packages.
HOST_PACKAGES_ARCH := configs/host-packages-arm64
# How the tests run its programs on the build machine: QEMU's user
# emulation (static binaries need no other file).
TARGET_RUN := qemu-aarch64
# No BIOS: the ISO and the stick boot UEFI only (no isolinux, no pxelinux).
BIOS_BOOT :=
# Its network boot files: netboot/arm64/ of the served tree, so both
# architectures' tars unpack side by side.
NETBOOT_PATH := netboot/arm64
# The UEFI boot menu's entries: PL011 (ttyAMA0) and 8250 (ttyS0) consoles.
LOADER_ENTRIES_DIR := iso/loader/entries-arm64
