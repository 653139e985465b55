# busybox: static with musl, from the pinned Debian source and busybox.config beside this file.

BUSYBOX_SRC := $(BUILD)/busybox
BUSYBOX_BIN := $(BUSYBOX_SRC)/busybox
# Its applets, one path a line, from its own config (made without running
# the binary, which another architecture's build machine cannot).
BUSYBOX_LINKS := $(BUSYBOX_SRC)/busybox.links
BUSYBOX_MAKE = $(MAKE) -C $(BUSYBOX_SRC) CC="$(TARGET_CC)" HOSTCC=gcc CROSS_COMPILE=$(TARGET_CROSS) \
	KCONFIG_NOTIMESTAMP=1 SKIP_STRIP=n
BUSYBOX_DEPENDENCIES := package/busybox/busybox.config $(STAMPS)/linux-headers
BUSYBOX_LICENSE := GPL-2.0-only
BUSYBOX_LICENSE_FILES := LICENSE
define BUSYBOX_CONFIGURE_CMDS
	$(Q)cp package/busybox/busybox.config $(BUSYBOX_SRC)/.config
	+$(Q)$(BUSYBOX_MAKE) -s oldconfig </dev/null >$(BUSYBOX_SRC)/oldconfig.log 2>&1 || \
	 { tail -n 3 $(BUSYBOX_SRC)/oldconfig.log >&2; echo "busybox: package/busybox/busybox.config lacks an option $(BUSYBOX_VERSION) asks about (above); run 'make busybox-menuconfig' and save" >&2; exit 1; }
	$(Q)cmp -s <(grep -v '^#' package/busybox/busybox.config) <(grep -v '^#' $(BUSYBOX_SRC)/.config) || \
	 { echo "busybox: package/busybox/busybox.config is incomplete for $(BUSYBOX_VERSION); run 'make busybox-menuconfig' and save" >&2; exit 1; }
endef
define BUSYBOX_BUILD_CMDS
	+$(Q)scripts/logged busybox build $(BUSYBOX_SRC)/build.log $(BUSYBOX_MAKE) $(SUBMAKE_J) busybox busybox.links
endef
# The binary itself goes in by gen-list (it also makes the applet links).
define BUSYBOX_INSTALL_CMDS
	$(Q)scripts/check-static busybox $(BUSYBOX_BIN)
endef
# The initramfs takes the program and its list of names from the build folder.
BUSYBOX_CACHE_OUTPUTS := busybox busybox.links .config
$(eval $(call package,busybox,BUSYBOX))

.PHONY: busybox-menuconfig
busybox-menuconfig: $(STAMPS)/busybox-patched ## edit package/busybox/busybox.config
	$(Q)cp package/busybox/busybox.config $(BUSYBOX_SRC)/.config
	$(Q)$(BUSYBOX_MAKE) menuconfig
	$(Q)cp $(BUSYBOX_SRC)/.config package/busybox/busybox.config
	$(Q)echo "busybox: saved package/busybox/busybox.config"
