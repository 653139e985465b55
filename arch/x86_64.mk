# x86_64: what the build needs to know of the target architecture. Another
# architecture is another file like this one (EXTRESCUE_ARCH=NAME).
KERNEL_ARCH := x86_64
# The kernel image the boot loaders start, under the kernel's build folder.
KERNEL_IMAGE := arch/x86/boot/bzImage
# configure's --host for the musl builds.
GNU_TRIPLET := x86_64-linux-musl
# readelf's name for the machine: every ELF file in the image must say it.
ELF_MACHINE := Advanced Micro Devices X86-64
