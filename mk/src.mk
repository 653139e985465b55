# Our own C code in src/: static musl objects and tools for the image, and
# their unit tests built for the host.

SRC_OBJ := $(BUILD)/src
MUSL_CFLAGS := -O2 -Wall -Wextra -Werror
HOST_TOOL_CFLAGS := -O2 -Wall -Wextra -Werror
SANITIZE := -fsanitize=address,undefined
# The compilers and their flags as a stamp: a changed flag rebuilds src/.
SRC_FLAGS := $(STAMPS)/src-flags
$(call write_if_changed,$(SRC_FLAGS),$(TARGET_CC) $(MUSL_CFLAGS) | $(CC) $(HOST_TOOL_CFLAGS) $(SANITIZE))
# An archive, not an object: some link lines name LIBS twice.
FAST_STRING_A := $(SRC_OBJ)/libfast-string.a

# -fno-builtin: these are the library functions; never turn them into calls.
$(FAST_STRING_A): src/fast-string/fast-string.c $(SRC_FLAGS) $(STAMPS)/host-toolchain | $(STAMPS)/linux-headers
	$(Q)mkdir -p $(dir $@)
	$(Q)$(TARGET_CC) $(MUSL_CFLAGS) -fno-builtin -c $< -o $(SRC_OBJ)/fast-string.o
	$(Q)rm -f $@ && $(TARGET_AR) rcD $@ $(SRC_OBJ)/fast-string.o

$(SRC_OBJ)/test-fast-string: tests/c/test-fast-string.c src/fast-string/fast-string.c
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -O2 -Wall -Wextra -fno-builtin -Dmemcmp=xr_memcmp -Dstrncmp=xr_strncmp -c src/fast-string/fast-string.c -o $@.o
	$(Q)$(CC) -O2 -Wall -Wextra tests/c/test-fast-string.c $@.o -o $@

# Our tools: static with musl for the image; the ones with host-side tests
# also natively, with the sanitizers. $(call static_tool,TARGET,DEPS) and
# $(call host_tool,TARGET,DEPS,EXTRA CFLAGS) compile the .c files of DEPS.
define static_tool
$(1): $(2) $$(SRC_FLAGS) $$(STAMPS)/host-toolchain | $$(STAMPS)/linux-headers
	$(Q)if [ -f $$(@D) ]; then rm -f $$(@D); fi; mkdir -p $$(@D)
	$(Q)$$(TARGET_CC) $$(MUSL_CFLAGS) -static -o $$@ $$(filter %.c,$(2))
	$(Q)$(TARGET_STRIP) --strip-all $$@
	$(Q)scripts/check-static src $$@
	$(Q)scripts/check-bin-arch src "$$(ELF_MACHINE)" $$@
endef
define host_tool
$(1): $(2) $$(SRC_FLAGS) $$(STAMPS)/host-toolchain
	$(Q)mkdir -p $$(dir $$@)
	$(Q)$$(CC) $$(HOST_TOOL_CFLAGS) $(3) -o $$@ $$(filter %.c,$(2))
endef
SRC_ROOT := $(BUILD)/src-root

# extscan: what is on every disk, read-only.
EXTSCAN_SRC := src/extscan/extscan.c src/extscan/read.c src/extscan/system.c src/extscan/print.c src/extscan/metrics.c src/extscan/extscan.h src/lib/extsb.c src/lib/extsb.h src/lib/layout.c src/lib/layout.h src/lib/le.h src/lib/text.h src/lib/promtext.h
$(eval $(call static_tool,$(SRC_ROOT)/sbin/extscan,$(EXTSCAN_SRC)))
$(eval $(call host_tool,$(SRC_OBJ)/host/extscan,$(EXTSCAN_SRC),$(SANITIZE)))

# cmdline: the kernel command line as data (run by init), network parameters
# and SSH keys included; authkeys: a fetched authorized_keys file, checked.
CMDLINE_SRC := src/cmdline/cmdline.c src/lib/text.h src/lib/kargs.c src/lib/kargs.h src/lib/netargs.c src/lib/netargs.h src/lib/sshkey.c src/lib/sshkey.h
$(eval $(call static_tool,$(SRC_ROOT)/sbin/cmdline,$(CMDLINE_SRC)))
$(eval $(call host_tool,$(SRC_OBJ)/host/cmdline,$(CMDLINE_SRC),$(SANITIZE)))
AUTHKEYS_SRC := src/authkeys/authkeys.c src/lib/sshkey.c src/lib/sshkey.h
$(eval $(call static_tool,$(SRC_ROOT)/lib/extrescue/net/authkeys,$(AUTHKEYS_SRC)))
$(eval $(call host_tool,$(SRC_OBJ)/host/authkeys,$(AUTHKEYS_SRC),$(SANITIZE)))

# report: the JSON document rescue.report= sends.
REPORT_SRC := src/report/report.c src/report/machine.c src/report/metrics.c src/report/report.h src/lib/kargs.c src/lib/kargs.h src/lib/promtext.h
$(eval $(call static_tool,$(SRC_ROOT)/lib/extrescue/report/json,$(REPORT_SRC)))
$(eval $(call host_tool,$(SRC_OBJ)/host/report,$(REPORT_SRC),$(SANITIZE)))
# http-put: rescue.metrics= pushes to a Pushgateway with PUT (busybox wget only POSTs).
HTTP_PUT_SRC := src/http-put/http-put.c src/lib/connect.c src/lib/connect.h src/lib/text.h
$(eval $(call static_tool,$(SRC_ROOT)/lib/extrescue/report/http-put,$(HTTP_PUT_SRC)))
$(eval $(call host_tool,$(SRC_OBJ)/host/http-put,$(HTTP_PUT_SRC),$(SANITIZE)))
# syslog-forward: rescue.syslog= sends every line said to a syslog server (RFC 5424).
SYSLOG_FORWARD_SRC := src/syslog-forward/syslog-forward.c src/lib/connect.c src/lib/connect.h src/lib/text.h
$(eval $(call static_tool,$(SRC_ROOT)/lib/extrescue/syslog/forward,$(SYSLOG_FORWARD_SRC)))
$(eval $(call host_tool,$(SRC_OBJ)/host/syslog-forward,$(SYSLOG_FORWARD_SRC),$(SANITIZE)))

# efibootmgr: the firmware's boot entries through efivarfs (our own; the
# archive serves neither efibootmgr's nor efivar's sources).
$(eval $(call static_tool,$(SRC_ROOT)/usr/sbin/efibootmgr,src/efibootmgr/efibootmgr.c src/lib/le.h))

# nvme: the read-only nvme-cli commands (list, id-ctrl, smart-log,
# error-log), our own: the archive serves no libnvme source.
$(eval $(call static_tool,$(SRC_ROOT)/usr/sbin/nvme,src/nvme/nvme.c src/lib/le.h src/lib/text.h))

# inroot: resolves the target's paths inside its root (used by rescue-mount)
# and writes its files (rescue-fstab) without following what it planted.
INROOT_SRC := src/inroot/inroot.c src/inroot/inroot-replace.c src/inroot/inroot.h
$(eval $(call static_tool,$(SRC_ROOT)/lib/extrescue/disks/inroot,$(INROOT_SRC)))
$(eval $(call host_tool,$(SRC_OBJ)/host/inroot,$(INROOT_SRC),$(SANITIZE)))

# disk-inuse: is a disk in use by any of its names; the one answer of
# rescue-stick (write-stick), qemu/run and iobench. A build for the host goes
# beside write-stick in out/ARCH/, where write-stick and qemu/run find it:
# static with the host's musl (70 KB, where glibc's static is 800 KB), so
# it runs on whatever host the release is copied to.
INUSE_SRC := src/lib/inuse.c src/lib/inuse.h
DISK_INUSE_SRC := src/disk-inuse/disk-inuse.c $(INUSE_SRC)
$(eval $(call static_tool,$(SRC_ROOT)/sbin/disk-inuse,$(DISK_INUSE_SRC)))
$(eval $(call host_tool,$(SRC_OBJ)/host/disk-inuse,$(DISK_INUSE_SRC),$(SANITIZE)))
$(OUT)/disk-inuse: $(DISK_INUSE_SRC) $(SRC_FLAGS) | $(STAMPS)/host-deps
	$(Q)mkdir -p $(dir $@)
	$(Q)musl-gcc $(HOST_TOOL_CFLAGS) -static -s -o $@ $(filter %.c,$(DISK_INUSE_SRC))

# iobench: the same source builds for the host so a loop device there gives
# the side-by-side table.
IOBENCH_SRC := src/iobench/iobench.c src/iobench/iobench-dev.c src/iobench/iobench-work.c src/iobench/iobench-report.c src/iobench/iobench-read.c src/lib/md5.c \
	src/lib/inuse.c
IOBENCH_DEPS := $(IOBENCH_SRC) $(wildcard src/iobench/*.h) src/lib/md5.h src/lib/inuse.h
$(eval $(call static_tool,$(SRC_ROOT)/sbin/iobench,$(IOBENCH_DEPS)))
$(eval $(call host_tool,$(SRC_OBJ)/host/iobench,$(IOBENCH_DEPS)))

# Every program of ours the image carries; `make src-programs` builds them
# alone (for EXTRESCUE_ARCH=arm64, the tests run them under qemu-aarch64).
SRC_PROGRAMS := $(addprefix $(SRC_ROOT)/,sbin/extscan sbin/iobench sbin/disk-inuse lib/extrescue/disks/inroot sbin/cmdline \
	lib/extrescue/net/authkeys lib/extrescue/report/json lib/extrescue/report/http-put lib/extrescue/syslog/forward \
	usr/sbin/efibootmgr usr/sbin/nvme)
# A program that moved leaves its old file in an earlier build's SRC_ROOT,
# which the image takes whole: the initramfs prunes it to these first.
PRUNE_SRC_ROOT = find $(SRC_ROOT) -type f | while read -r f; do case " $(SRC_PROGRAMS) " in *" $$f "*) ;; \
	*) echo "src: $$f is no program of today's; removed" && rm -f "$$f" ;; esac; done
.PHONY: src-programs
src-programs: $(SRC_PROGRAMS) ## our own programs (src/), static, for the target architecture

# Fuzzing needs clang's libFuzzer, installed on first use only. One target per
# parser of hostile bytes, PARSER:MAX_LEN (the largest input it is given), each
# src/fuzz/fuzz-PARSER.c. A run is FUZZ_RUNS inputs per parser, a count and not a
# time, so it means the same on any machine; FUZZ_SECONDS, if set, caps each.
FUZZ_RUNS ?= 200000
FUZZ_PARSERS := extsb:4096 layout:400000 cmdline:9000 netargs:512 authkeys:16384 report:20000
FUZZ_CORPUS := $(SRC_OBJ)/fuzz-corpus
# UBSan findings stop a run as ASan's do (by default it only prints them).
FUZZ_CFLAGS := -g -O1 -Wall -Wextra -Werror -DFUZZING -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined
$(STAMPS)/host-deps-fuzz: configs/host-packages-fuzz | $(STAMPS)
	$(Q)scripts/host-deps $<
	$(Q)echo "libclang-rt-$$(clang -dumpversion | cut -d. -f1)-dev" > $@.runtime && scripts/host-deps $@.runtime
	$(Q)touch $@

# $(call fuzz_target,PARSER,DEPS): src/fuzz/fuzz-PARSER.c linked with the .c files
# of DEPS marked +; the rest are headers or the tool the target includes.
define fuzz_target
$(SRC_OBJ)/fuzz-$(1): src/fuzz/fuzz-$(1).c $(subst +,,$(2)) | $$(STAMPS)/host-deps-fuzz
	$(Q)mkdir -p $$(dir $$@)
	$(Q)clang $$(FUZZ_CFLAGS) -o $$@ src/fuzz/fuzz-$(1).c $(patsubst +%,%,$(filter +%,$(2)))
endef
$(eval $(call fuzz_target,extsb,+src/lib/extsb.c src/lib/extsb.h src/lib/le.h src/lib/text.h))
$(eval $(call fuzz_target,layout,+src/lib/layout.c src/lib/layout.h src/lib/le.h src/lib/text.h))
$(eval $(call fuzz_target,cmdline,src/cmdline/cmdline.c src/lib/text.h +src/lib/kargs.c src/lib/kargs.h +src/lib/netargs.c src/lib/netargs.h +src/lib/sshkey.c src/lib/sshkey.h))
$(eval $(call fuzz_target,netargs,+src/lib/netargs.c src/lib/netargs.h))
$(eval $(call fuzz_target,authkeys,src/authkeys/authkeys.c +src/lib/sshkey.c src/lib/sshkey.h))
$(eval $(call fuzz_target,report,src/report/report.c +src/report/machine.c +src/report/metrics.c src/report/report.h +src/lib/kargs.c src/lib/kargs.h src/lib/promtext.h))
FUZZ_BINS := $(foreach t,$(FUZZ_PARSERS),$(SRC_OBJ)/fuzz-$(firstword $(subst :, ,$(t))))

# One line per parser; the crashing inputs stay in fuzz-crashes/PARSER/, the
# whole output in fuzz-PARSER.log. Targets' own messages (stderr) are muted.
.PHONY: fuzz
fuzz: $(FUZZ_BINS) ## fuzz every parser of hostile bytes, FUZZ_RUNS inputs each (default 200000)
	$(Q)tests/fuzz-seeds $(FUZZ_CORPUS)
	$(Q)failed=; for t in $(FUZZ_PARSERS); do \
	  p=$${t%%:*} max=$${t#*:} log=$(SRC_OBJ)/fuzz-$${t%%:*}.log crashes=$(SRC_OBJ)/fuzz-crashes/$${t%%:*}/; \
	  rm -rf $$crashes && mkdir -p $$crashes $(FUZZ_CORPUS)/$$p; \
	  status=0; $(SRC_OBJ)/fuzz-$$p -runs=$(FUZZ_RUNS) $(if $(FUZZ_SECONDS),-max_total_time=$(FUZZ_SECONDS)) \
	    -max_len=$$max -timeout=10 -close_fd_mask=2 -print_final_stats=1 -artifact_prefix=$$crashes \
	    $(FUZZ_CORPUS)/$$p > $$log 2>&1 || status=$$?; \
	  runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$log); \
	  found=$$(ls $$crashes | wc -l); \
	  echo "fuzz: $$p: $${runs:-?} executions, $$found crashes"; \
	  [ $$status = 0 ] && [ $$found = 0 ] || failed="$$failed $$p"; \
	done; \
	[ -z "$$failed" ] || { echo "fuzz: crashed:$$failed; inputs in $(SRC_OBJ)/fuzz-crashes/PARSER; see why with $(SRC_OBJ)/fuzz-PARSER INPUT" >&2; exit 1; }
