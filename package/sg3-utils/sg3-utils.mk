# sg3_utils: SCSI commands through the SG_IO pass-through (inquiry, capacity,
# test unit ready, log and VPD pages) for disks behind SAS HBAs and RAID
# controllers; static with musl. Only the programs a failing-disk triage
# uses are installed. libtool needs -all-static for a static link.

SG3_UTILS_OBJ := $(BUILD)/sg3-utils
SG3_UTILS_DEPENDENCIES := $(STAMPS)/linux-headers
SG3_UTILS_LICENSE := BSD-2-Clause AND GPL-2.0-or-later
SG3_UTILS_LICENSE_FILES := COPYING BSD_LICENSE
SG3_UTILS_PROGRAMS := sg_inq sg_readcap sg_turs sg_logs sg_vpd sg_sat_identify sg_senddiag sg_requests
SG3_UTILS_CONFIGURE_CMDS = $(call autotools_configure,sg3-utils,SG3_UTILS,--disable-shared --enable-static,LDFLAGS=)
define SG3_UTILS_BUILD_CMDS
	+$(Q)scripts/logged sg3-utils build $(SG3_UTILS_OBJ)/build.log $(MAKE) -C $(SG3_UTILS_OBJ) $(SUBMAKE_J) \
	  LDFLAGS="-all-static -Wl,--gc-sections"
endef
SG3_UTILS_INSTALL_CMDS = $(call install_stripped,SG3_UTILS,usr/bin,$(addprefix src/,$(SG3_UTILS_PROGRAMS)))
SG3_UTILS_CACHE_OUTPUTS := $(addprefix src/,$(SG3_UTILS_PROGRAMS))
$(eval $(call package,sg3-utils,SG3_UTILS))
