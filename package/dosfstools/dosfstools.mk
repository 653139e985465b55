# dosfstools: fsck.fat and mkfs.fat, for the EFI system partition that went
# down with a failing disk; static with musl (its iconv for the code pages).

DOSFSTOOLS_OBJ := $(BUILD)/dosfstools
DOSFSTOOLS_DEPENDENCIES := $(STAMPS)/linux-headers
DOSFSTOOLS_LICENSE := GPL-3.0-or-later
DOSFSTOOLS_LICENSE_FILES := COPYING
DOSFSTOOLS_CONFIGURE_CMDS = $(call autotools_configure,dosfstools,DOSFSTOOLS,--without-udev)
define DOSFSTOOLS_BUILD_CMDS
	+$(Q)scripts/logged dosfstools build $(DOSFSTOOLS_OBJ)/build.log $(MAKE) -C $(DOSFSTOOLS_OBJ)/src $(SUBMAKE_J) fsck.fat mkfs.fat fatlabel
endef
# The names distributions use, so `fsck -t vfat` and scripts find them.
define DOSFSTOOLS_INSTALL_CMDS
	$(call install_stripped,DOSFSTOOLS,sbin,src/fsck.fat src/mkfs.fat src/fatlabel)
	$(Q)for a in fsck.vfat fsck.msdos dosfsck; do ln -s fsck.fat $(DOSFSTOOLS_ROOT)/sbin/$$a; done
	$(Q)for a in mkfs.vfat mkfs.msdos mkdosfs; do ln -s mkfs.fat $(DOSFSTOOLS_ROOT)/sbin/$$a; done
endef
DOSFSTOOLS_CACHE_OUTPUTS := src/fsck.fat src/mkfs.fat src/fatlabel
$(eval $(call package,dosfstools,DOSFSTOOLS))
