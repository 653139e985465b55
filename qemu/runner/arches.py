"""What differs between the architectures' virtual machines, for qemu/run
and qemu/smoke: the kernel the build makes, the serial console's name, the
firmware and its package. cli.py, build.py and firmware.py read it, and
qemu/smoke for the console's name."""
OVMF_CODE = "/usr/share/OVMF/OVMF_CODE_4M.fd"
OVMF_VARS = "/usr/share/OVMF/OVMF_VARS_4M.fd"
# Secure Boot: the SMM build of OVMF, and variables with Microsoft's keys
# enrolled and Secure Boot on, as on a server from the shop.
OVMF_SB_CODE = "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd"
OVMF_SB_VARS = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd"
# arm64: AAVMF, edk2 for QEMU's virt machine (package qemu-efi-aarch64).
# One build does both: Secure Boot needs no SMM there, and is on when the
# variables are the .ms ones, which hold Microsoft's keys.
AAVMF_CODE = "/usr/share/AAVMF/AAVMF_CODE.fd"
AAVMF_VARS = "/usr/share/AAVMF/AAVMF_VARS.fd"
AAVMF_SB_CODE = "/usr/share/AAVMF/AAVMF_CODE.ms.fd"
AAVMF_SB_VARS = "/usr/share/AAVMF/AAVMF_VARS.ms.fd"
ARCHES = {
    "x86_64": {"kernel": "build/linux/arch/x86/boot/bzImage", "console": "ttyS0",
               "firmware": ((OVMF_CODE, OVMF_VARS), (OVMF_SB_CODE, OVMF_SB_VARS)), "package": "ovmf"},
    "arm64": {"kernel": "build/linux/arch/arm64/boot/Image", "console": "ttyAMA0",
              "firmware": ((AAVMF_CODE, AAVMF_VARS), (AAVMF_SB_CODE, AAVMF_SB_VARS)), "package": "qemu-efi-aarch64"},
}
