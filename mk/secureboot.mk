# Secure Boot: Debian's Microsoft-signed shim starts our systemd-boot, which
# starts a unified kernel image (kernel, initramfs, command line, .sbat); both
# are signed with the project key, which users enroll once as a Machine Owner
# Key. EXTRESCUE_SB_KEY and EXTRESCUE_SB_CERT name a distributor's key and
# certificate (PEM); without them a project key is made once under the
# download cache and reused. With Secure Boot off the same files boot.

SB_DIR := $(BUILD)/secureboot
SHIM_DEBS := $(BUILD)/shim-debs
SB_KEY_DIR := $(EXTRESCUE_CACHE)/secureboot
SB_KEY := $(or $(EXTRESCUE_SB_KEY),$(SB_KEY_DIR)/extrescue-sb.key)
SB_CERT := $(or $(EXTRESCUE_SB_CERT),$(SB_KEY_DIR)/extrescue-sb.crt)
SB_MAKE_KEY := $(if $(EXTRESCUE_SB_KEY)$(EXTRESCUE_SB_CERT),no,yes)
MOK_CER := $(OUT)/extrescue-mok.cer
SHIM := $(SHIM_DEBS)/usr/lib/shim/shim$(EFI_ARCH).efi.signed
MOKMANAGER := $(SHIM_DEBS)/usr/lib/shim/mm$(EFI_ARCH).efi.signed
SIGNED_BOOTLOADER := $(SB_DIR)/grub$(EFI_ARCH).efi
SIGNED_UKI := $(SB_DIR)/extrescue.efi
# The ISO's bare kernel (x86_64), signed too: a multi-boot stick's GRUB boots
# it with Secure Boot on through shim, which checks it against the MOK.
SIGNED_BZIMAGE := $(SB_DIR)/vmlinuz
SD_EFI := $(BUILD)/boot-debs/usr/lib/systemd/boot/efi

# Rewritten only when another key is named, so everything signed is redone then.
$(call write_if_changed,$(STAMPS)/sb-key-names,$(SB_KEY) $(SB_CERT))

$(STAMPS)/sb-key: $(STAMPS)/sb-key-names scripts/sb-key | $(STAMPS)/host-deps
	$(Q)scripts/sb-key $(SB_KEY) $(SB_CERT) $(SB_MAKE_KEY)
	$(Q)touch $@

# sb-key makes the pair on a machine that has none; without this rule a
# missing certificate is a prerequisite nothing makes, and make stops.
# Order-only: a certificate that is there is current (make -q says so).
$(SB_CERT): | $(STAMPS)/sb-key ;

$(MOK_CER): $(STAMPS)/sb-key $(SB_CERT)
	$(Q)openssl x509 -in $(SB_CERT) -outform DER -out $@
	$(Q)echo "secureboot: $(notdir $@) (sha256 $$(sha256sum $@ | cut -c1-16)...) is the certificate to enroll"

$(STAMPS)/shim-debs: $(call pin_stamp,shim-signed) $(call pin_stamp,shim-helpers) | $(STAMPS)/host-deps $(BUILD)
	$(call unpack_debs,shim-signed shim-helpers,$(SHIM_DEBS))
	$(Q)touch $@

# shim starts the second stage by the name GRUB has on a Debian system.
# Signed at SOURCE_DATE_EPOCH (sb-sign's frozen clock): a new commit signs it
# again, or an incremental build keeps an older commit's signing time.
$(SIGNED_BOOTLOADER): $(STAMPS)/boot-debs $(STAMPS)/sb-key $(SB_CERT) scripts/sb-sign $(EPOCH_STAMP)
	$(Q)mkdir -p $(SB_DIR)
	$(Q)scripts/sb-sign $(SB_KEY) $(SB_CERT) $(SD_EFI)/systemd-boot$(EFI_ARCH).efi $@

# The unified image every menu entry of the ESP boots, with the CD's default
# entry as its command line: with Secure Boot on, systemd's stub ignores the
# entry's options, and the initramfs applies the chosen entry's (see
# initramfs/rootfs/lib/extrescue/boot/efi-entry).
$(SIGNED_BZIMAGE): $(STAMPS)/linux-built $(STAMPS)/sb-key $(SB_CERT) scripts/sb-sign $(EPOCH_STAMP)
	$(Q)mkdir -p $(SB_DIR)
	$(Q)scripts/sb-sign $(SB_KEY) $(SB_CERT) $(BZIMAGE) $@

$(SIGNED_UKI): $(STAMPS)/boot-debs $(STAMPS)/linux-built $(INITRAMFS) $(STAMPS)/initramfs-gen $(STAMPS)/sb-key \
		$(SB_CERT) $(MENU_INPUTS) netboot/menus scripts/build-uki scripts/sb-sign
	$(Q)mkdir -p $(SB_DIR)
	$(Q)TARGET_CROSS=$(TARGET_CROSS) scripts/build-uki $(SB_DIR)/extrescue.unsigned.efi $(SD_EFI)/linux$(EFI_ARCH).efi.stub $(BZIMAGE) $(INITRAMFS) \
	  $(INITRAMFS_GEN)/etc/os-release "$$(netboot/menus cmdline $(MENU_SOURCE))"
	$(Q)scripts/sb-sign $(SB_KEY) $(SB_CERT) $(SB_DIR)/extrescue.unsigned.efi $@
	$(Q)rm -f $(SB_DIR)/extrescue.unsigned.efi

.PHONY: secureboot-key
secureboot-key: $(MOK_CER) ## make (once) or check the Secure Boot key; out/x86_64/extrescue-mok.cer is what users enroll

# For the tests and qemu/run --mok, never in the image: virt-fw-vars enrolls
# a certificate into a copy of OVMF's variable store.
VIRT_FIRMWARE := $(BUILD)/virt-firmware
$(STAMPS)/virt-firmware: $(call pin_stamp,python3-virt-firmware) | $(STAMPS)/host-deps $(BUILD)
	$(call unpack_debs,python3-virt-firmware,$(VIRT_FIRMWARE))
	$(Q)touch $@
.PHONY: virt-firmware
virt-firmware: $(STAMPS)/virt-firmware ## unpack virt-fw-vars for qemu/run --mok (make test does it)
