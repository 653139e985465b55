# ISO: bootloaders from pinned Debian packages, the ESP image (its signed
# files come from mk/secureboot.mk), xorriso, then
# the manifest (SHA256SUMS is the Makefile's, over the ISO and the netboot tar).

BOOT_DEBS := $(BUILD)/boot-debs
ISO_STAGE := $(BUILD)/iso-stage
ESP_IMG := $(BUILD)/efiboot.img
MANIFEST := $(OUT)/manifest
ISO_INPUTS := $(if $(BIOS_BOOT),iso/isolinux.cfg) iso/loader/loader.conf $(LOADER_ENTRIES) $(STAMPS)/loader-entries \
	iso/build-esp iso/build-iso scripts/manifest scripts/licenses-index $(COMPONENTS) $(MENU_INPUTS) netboot/menus

# isolinux and its modules for BIOS, systemd-boot for UEFI.
BOOT_DEB_PINS := $(if $(BIOS_BOOT),isolinux syslinux-common) systemd-boot-efi
$(STAMPS)/boot-debs: $(foreach n,$(BOOT_DEB_PINS),$(call pin_stamp,$(n))) | $(STAMPS)/host-deps $(BUILD)
	$(call unpack_debs,$(BOOT_DEB_PINS),$(BOOT_DEBS))
	$(Q)touch $@

ESP_STAGE := $(BUILD)/esp-stage
$(ESP_IMG): $(STAMPS)/shim-debs $(SIGNED_BOOTLOADER) $(SIGNED_UKI) $(MOK_CER) \
		iso/loader/loader.conf $(LOADER_ENTRIES) $(STAMPS)/loader-entries iso/build-esp
	$(Q)rm -rf $(ESP_STAGE) && mkdir -p $(ESP_STAGE)/EFI/BOOT $(ESP_STAGE)/EFI/extrescue $(ESP_STAGE)/loader/entries
	$(Q)cp $(SHIM) $(ESP_STAGE)/EFI/BOOT/BOOT$(EFI_ARCH_UPPER).EFI
	$(Q)cp $(MOKMANAGER) $(ESP_STAGE)/EFI/BOOT/mm$(EFI_ARCH).efi
	$(Q)cp $(SIGNED_BOOTLOADER) $(ESP_STAGE)/EFI/BOOT/grub$(EFI_ARCH).efi
	$(Q)cp $(SIGNED_UKI) $(MOK_CER) $(ESP_STAGE)/EFI/extrescue/
	$(Q)cp iso/loader/loader.conf $(ESP_STAGE)/loader/
	$(Q)cp $(LOADER_ENTRIES) $(ESP_STAGE)/loader/entries/
	$(Q)iso/build-esp $@ $(ESP_STAGE)

# isolinux boots the kernel and initramfs as files of the ISO 9660 side;
# UEFI boots the unified image on the ESP, so an ISO without BIOS boot
# (arm64) carries them once, not twice.
define ISOLINUX_STAGE_CMDS
	$(Q)cp $(SIGNED_BZIMAGE) $(ISO_STAGE)/boot/vmlinuz
	$(Q)cp $(INITRAMFS) $(ISO_STAGE)/boot/initrd.zst
	$(Q)mkdir -p $(ISO_STAGE)/isolinux
	$(Q)cp $(BOOT_DEBS)/usr/lib/ISOLINUX/isolinux.bin $(ISO_STAGE)/isolinux/
	$(Q)cp $(addprefix $(BOOT_DEBS)/usr/lib/syslinux/modules/bios/,ldlinux.c32 menu.c32 libutil.c32) $(ISO_STAGE)/isolinux/
	$(Q)sed 's/@VERSION@/$(VERSION)/' iso/isolinux.cfg > $(ISO_STAGE)/isolinux/isolinux.cfg
endef

# The ISO is also out/extrescue-VERSION-ARCH.iso, a link into out/ARCH/, so
# out/*.iso names every architecture's image (dd and QEMU follow the link).
ISO_LINK := $(if $(filter $(TOP)/out/$(EXTRESCUE_ARCH),$(OUT)),$(TOP)/out/$(notdir $(ISO)))
ISO_LINKS := $(if $(ISO_LINK),$(TOP)/out/extrescue-*-$(EXTRESCUE_ARCH).iso)
$(ISO): $(ESP_IMG) $(ISO_INPUTS) $(if $(BIOS_BOOT),$(SIGNED_BZIMAGE))
	$(Q)rm -rf $(ISO_STAGE) && mkdir -p $(ISO_STAGE)/boot
	$(if $(BIOS_BOOT),$(ISOLINUX_STAGE_CMDS))
	$(Q)cp $(ESP_IMG) $(ISO_STAGE)/boot/efiboot.img
	$(Q)mkdir -p $(ISO_STAGE)/boot/grub
	$(Q)netboot/menus grub $(MENU_SOURCE) $(VERSION) $(if $(BIOS_BOOT),,--uki-only) > $(ISO_STAGE)/boot/grub/loopback.cfg
	$(Q)mkdir -p $(ISO_STAGE)/EFI/extrescue && cp $(MOK_CER) $(ISO_STAGE)/EFI/extrescue/
	$(Q)scripts/licenses-index $(COMPONENTS) > $(ISO_STAGE)/LICENSES
	$(Q)rm -f $(OUT)/extrescue-*-$(EXTRESCUE_ARCH).iso
	$(Q)iso/build-iso $@ $(ISO_STAGE) $(if $(BIOS_BOOT),$(BOOT_DEBS)/usr/lib/ISOLINUX/isohdpfx.bin)
	$(Q)$(if $(ISO_LINK),rm -f $(ISO_LINKS) && ln -s $(EXTRESCUE_ARCH)/$(notdir $@) $(ISO_LINK))
	$(Q)VERSION=$(VERSION) LINUX_CONFIG=$(LINUX_OBJ)/.config ESP_STAGE=$(ESP_STAGE) EFI_ARCH=$(EFI_ARCH) \
	  CROSS_PACKAGES="$(CROSS_PACKAGES)" scripts/manifest $(COMPONENTS) \
	  $(foreach p,$(PACKAGES),$(p)=$($(PKG_VAR_$(p))_SRC)) > $(MANIFEST)
	$(Q)echo "iso: $@ ($$(stat -c %s $@) bytes)"

.PHONY: iso
iso: $(ISO) ## the ISO and the manifest only
