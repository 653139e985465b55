# GNU ddrescue: copies a failing disk to another disk or a file, with a
# mapfile, retries and reverse passes. It is C++; Debian has no libstdc++ for
# musl, so it links statically against the host's glibc and libstdc++: it
# uses no name service or locale data, the parts of glibc that need shared
# objects at run time.

GDDRESCUE_LICENSE := GPL-2.0-or-later
GDDRESCUE_LICENSE_FILES := COPYING
define GDDRESCUE_CONFIGURE_CMDS
	@cd $(GDDRESCUE_SRC) && $(TOP)/scripts/logged gddrescue configure $(GDDRESCUE_SRC)/configure.log \
	  ./configure CXX=g++ CXXFLAGS="-O2 -ffunction-sections -fdata-sections $(PREFIX_MAP)" \
	  LDFLAGS="-static -Wl,--gc-sections"
endef
define GDDRESCUE_BUILD_CMDS
	@scripts/logged gddrescue build $(GDDRESCUE_SRC)/build.log $(MAKE) -C $(GDDRESCUE_SRC) $(SUBMAKE_J) ddrescue
endef
define GDDRESCUE_INSTALL_CMDS
	@mkdir -p $(GDDRESCUE_ROOT)/usr/bin
	@strip --strip-all -o $(GDDRESCUE_ROOT)/usr/bin/ddrescue $(GDDRESCUE_SRC)/ddrescue
endef
$(eval $(call package,gddrescue,GDDRESCUE))
