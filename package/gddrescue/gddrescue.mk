# GNU ddrescue: copies a failing disk to another disk or a file, with a
# mapfile, retries and reverse passes. It is C++; Debian has no libstdc++ for
# musl, so it links statically against the host's glibc and libstdc++: it
# uses no name service or locale data, the parts of glibc that need shared
# objects at run time.

GDDRESCUE_LICENSE := GPL-2.0-or-later
GDDRESCUE_LICENSE_FILES := COPYING
define GDDRESCUE_CONFIGURE_CMDS
	$(Q)cd $(GDDRESCUE_SRC) && $(TOP)/scripts/logged gddrescue configure $(GDDRESCUE_SRC)/configure.log \
	  ./configure CXX="$(TARGET_CXX)" CXXFLAGS="$(TARGET_CFLAGS)" \
	  LDFLAGS="$(TARGET_LDFLAGS)"
endef
define GDDRESCUE_BUILD_CMDS
	$(Q)scripts/logged gddrescue build $(GDDRESCUE_SRC)/build.log $(MAKE) -C $(GDDRESCUE_SRC) $(SUBMAKE_J) ddrescue
endef
define GDDRESCUE_INSTALL_CMDS
	$(Q)mkdir -p $(GDDRESCUE_ROOT)/usr/bin
	$(Q)$(TARGET_STRIP) --strip-all -o $(GDDRESCUE_ROOT)/usr/bin/ddrescue $(GDDRESCUE_SRC)/ddrescue
endef
$(eval $(call package,gddrescue,GDDRESCUE))
