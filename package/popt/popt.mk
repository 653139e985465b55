# popt: cryptsetup's command line. Pinned as upstream.
POPT_DEPENDENCIES := $(STORAGE_LIB_DEPENDENCIES)
POPT_LICENSE := MIT
POPT_LICENSE_FILES := COPYING
POPT_CONFIGURE_CMDS = $(call autotools_configure,popt,POPT,--prefix=$(SYSROOT) --disable-shared \
	--enable-static --disable-nls,CFLAGS="$(STORAGE_CFLAGS)" LDFLAGS=)
POPT_BUILD_CMDS = $(call make_build,popt,POPT,install)
$(eval $(call package,popt,POPT))
