# lvm2: lvm (one binary; the usual command names are links to it) and
# dmsetup, static with musl. Also puts libdevmapper into the sysroot for
# cryptsetup. No udev, no daemons (lvmetad, lvmpolld, lvmlockd, dmeventd):
# a rescue system runs the commands by hand.

LVM2_DEPENDENCIES := $(STAMPS)/libaio-installed
LVM2_LICENSE := GPL-2.0-only AND LGPL-2.1-only AND BSD-2-Clause
LVM2_LICENSE_FILES := COPYING COPYING.LIB COPYING.BSD
LVM2_LINKS := pvs vgs lvs pvscan vgscan lvscan pvdisplay vgdisplay lvdisplay vgchange lvchange \
	vgck pvck vgcfgbackup vgcfgrestore vgimport vgexport vgmknodes vgrename lvrename pvchange \
	pvcreate pvremove pvresize vgcreate vgremove vgextend vgreduce lvcreate lvremove lvextend \
	lvreduce lvresize lvconvert
# Debian's patch changes configure.ac (modprobe is /sbin/modprobe, not where
# the build host keeps it); as in Debian's own build, configure is made again
# from it (the shipped aclocal.m4 has every macro it needs).
define LVM2_POST_PATCH_CMDS
	$(Q)cd $(LVM2_SRC) && $(TOP)/scripts/logged lvm2 autoconf $(LVM2_SRC)/autoconf.log autoconf -f
endef
LVM2_CONFIGURE_CMDS = $(call autotools_configure,lvm2,LVM2,--enable-static_link --disable-readline \
	--disable-selinux --without-systemd --without-udev --without-blkid --disable-blkid_wiping \
	--disable-systemd-journal --disable-app-machineid --disable-sd-notify --disable-use-lvmlockd \
	--disable-use-lvmpolld --disable-fsadm --disable-lvmimportvdo --disable-nls --with-vdo=none,\
	CFLAGS="$(STORAGE_CFLAGS)" LDFLAGS="$(STORAGE_LDFLAGS)" $(SYSROOT_ENV))
define LVM2_BUILD_CMDS
	+$(Q)scripts/logged lvm2 build $(LVM2_SRC)/build.log $(MAKE) -C $(LVM2_SRC) $(SUBMAKE_J) $(SYSROOT_ENV) all
	$(Q)cp $(LVM2_SRC)/libdm/ioctl/libdevmapper.a $(SYSROOT)/lib/ && cp $(LVM2_SRC)/libdm/libdevmapper.h $(SYSROOT)/include/
	$(Q)printf 'Name: devmapper\nDescription: lvm2 libdevmapper\nVersion: %s\nCflags: -I%s/include\nLibs: -L%s/lib -ldevmapper\nLibs.private: -lm -lpthread\n' \
	  '$(LVM2_VERSION)' '$(SYSROOT)' '$(SYSROOT)' > $(SYSROOT_PC)/devmapper.pc
endef
define LVM2_INSTALL_CMDS
	$(Q)mkdir -p $(LVM2_ROOT)/sbin
	$(Q)$(TARGET_STRIP) --strip-all -o $(LVM2_ROOT)/sbin/lvm $(LVM2_SRC)/tools/lvm.static
	$(Q)$(TARGET_STRIP) --strip-all -o $(LVM2_ROOT)/sbin/dmsetup $(LVM2_SRC)/libdm/dm-tools/dmsetup.static
	$(Q)for l in $(LVM2_LINKS); do ln -s lvm $(LVM2_ROOT)/sbin/$$l; done
endef
$(eval $(call package,lvm2,LVM2))
