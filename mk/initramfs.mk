# initramfs: gen_init_cpio list from initramfs/ plus generated files, zstd.

INITRAMFS := $(OUT)/initramfs.cpio.zst
INITRAMFS_GEN := $(BUILD)/initramfs-gen
# The boot menu's entries (the ESP's too): the list is a stamp, so an entry
# taken away redoes what carries them.
LOADER_ENTRIES := $(sort $(wildcard $(LOADER_ENTRIES_DIR)/*.conf))
$(call write_if_changed,$(STAMPS)/loader-entries,$(LOADER_ENTRIES))
# The menu the network boot menus and the unified image's command line are
# written from (netboot/menus): the CD's isolinux menu where there is BIOS
# boot, else the UEFI menu's entries.
MENU_SOURCE := $(if $(BIOS_BOOT),iso/isolinux.cfg,$(LOADER_ENTRIES_DIR))
MENU_INPUTS := $(if $(BIOS_BOOT),iso/isolinux.cfg,iso/loader/loader.conf $(LOADER_ENTRIES) $(STAMPS)/loader-entries)
INITRAMFS_INPUTS := initramfs/init initramfs/base.list initramfs/gen-list initramfs/modes $(LOADER_ENTRIES) $(STAMPS)/loader-entries \
	$(shell find initramfs/rootfs -print) README.md
# Every component's image tree, our tools, and the licence texts.
INITRAMFS_DEPS := $(foreach p,$(PACKAGES),$(STAMPS)/$(p)-installed) $(STAMPS)/legal-root \
	$(SRC_PROGRAMS) $(GEN_INIT_CPIO)

# etc/extrescue/iso-uuid: the ISO's UUID as xorriso makes it from
# SOURCE_DATE_EPOCH, by which the boot knows the stick it came from.
$(STAMPS)/initramfs-gen: $(INITRAMFS_INPUTS) $(foreach n,$(PACKAGES),$(call pin_stamp,$(n))) $(EPOCH_STAMP) | $(BUILD)
	$(Q)rm -rf $(INITRAMFS_GEN) && mkdir -p $(INITRAMFS_GEN)/etc $(INITRAMFS_GEN)/usr/share/doc/extrescue
	$(Q){ printf 'NAME=extrescue\nID=extrescue\nVERSION_ID=%s\nPRETTY_NAME="extrescue %s"\n' '$(VERSION)' '$(VERSION)'; \
	   $(foreach p,linux busybox e2fsprogs util-linux mdadm lvm2 cryptsetup dropbear,echo '$(PKG_VAR_$(p))_VERSION=$($(PKG_VAR_$(p))_VERSION)';) \
	 } > $(INITRAMFS_GEN)/etc/os-release
	$(Q)cp README.md $(INITRAMFS_GEN)/usr/share/doc/extrescue/README.md
	$(Q)mkdir -p $(INITRAMFS_GEN)/etc/extrescue
	$(Q)date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%d-%H-%M-%S-00 > $(INITRAMFS_GEN)/etc/extrescue/iso-uuid
	$(Q)for f in $(LOADER_ENTRIES); do \
	  printf '%s %s\n' "$${f##*/}" "$$(sed -n 's/^options[[:space:]]*//p' $$f)"; done > $(INITRAMFS_GEN)/etc/extrescue/boot-entries
	$(Q)touch $@

$(INITRAMFS): $(INITRAMFS_DEPS) $(STAMPS)/initramfs-gen
	$(Q)$(PRUNE_SRC_ROOT)
	$(Q)initramfs/gen-list $(TOP)/initramfs $(BUSYBOX_BIN) $(BUSYBOX_LINKS) $(INITRAMFS_GEN) $(IMAGE_ROOTS) > $(BUILD)/initramfs.list
	$(Q)scripts/check-bin-arch initramfs "$(ELF_MACHINE)" $$(awk '$$1 == "file" {print $$3}' $(BUILD)/initramfs.list)
	$(Q)$(GEN_INIT_CPIO) -t $(SOURCE_DATE_EPOCH) $(BUILD)/initramfs.list > $(BUILD)/initramfs.cpio
	$(Q)zstd -q -f -19 -T1 $(BUILD)/initramfs.cpio -o $@
	$(Q)echo "initramfs: $$(grep -c . $(BUILD)/initramfs.list) entries, $$(stat -c %s $@) bytes"

.PHONY: initramfs
initramfs: $(INITRAMFS) ## build the initramfs only
