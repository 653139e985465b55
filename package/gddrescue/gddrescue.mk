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
GDDRESCUE_BUILD_CMDS = $(call make_build,gddrescue,GDDRESCUE,ddrescue)
GDDRESCUE_INSTALL_CMDS = $(call install_stripped,GDDRESCUE,usr/bin,ddrescue)
GDDRESCUE_CACHE_OUTPUTS := ddrescue
$(eval $(call package,gddrescue,GDDRESCUE))
