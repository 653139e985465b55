# Tests, benchmarks and the interactive runner.

PYTEST = $(NO_JOBSERVER) /usr/bin/python3 -m pytest
# One knob for slow machines: every test timeout is multiplied by it.
EXTRESCUE_TIMEOUT_SCALE ?= 1
export EXTRESCUE_TIMEOUT_SCALE

.PHONY: test test-times test-build test-boot test-server run smoke bench bench-fsck bench-scratch bench-undo bench-kernel bench-io bench-assemble bench-crash bench-consoles bench-net bench-netboot bench-stick bench-multistick bench-fleet repro-check check-fresh
# Guests run TEST_JOBS at a time (pytest-xdist); each is one TCG thread. One
# more than the cores (at most 8): a test waits for about a seventh of its
# seconds (a timeout it proves, a sleeping guest, a scan's settle time), and
# a third guest on two cores fills that (a full run: 20m09 with two, 18m49
# with three, the CPU then busy 95% of the time). The tests that rebuild the
# image run first, with only the tests beside them that neither boot it nor
# run make in the tree (e2fsprogs' own suite in its build folder, the
# passthrough runner's way-out checks), so no core waits. The host builds of
# our tools that tests run are made here, once, not by several workers at once. Both parts run whatever the
# first gave, and the time table comes after them; the target fails if
# either failed.
TEST_JOBS ?= $(shell n=$$(($$(nproc) + 1)); [ $$n -gt 8 ] && n=8; echo $$n)
TEST_HOST_TOOLS := $(addprefix $(SRC_OBJ)/host/,extscan cmdline authkeys report inroot disk-inuse http-put syslog-forward) \
	$(SRC_OBJ)/test-fast-string $(SRC_OBJ)/test-aligned-alloc
# The unit tests of our programs also run their arm64 build, made here in
# its own tree (out/arm64; arch_out) by a make of that architecture, under Debian 13's
# qemu-aarch64 (static; unpacked from its pin, for the tests only). After
# the arm64 image's make, when there is one: two makes in one tree at once
# would build the same programs side by side.
.PHONY: test-arm64-programs
test-arm64-programs: | $(STAMPS)/host-deps $(filter all-arm64,$(addprefix all-,$(OTHER_ARCHES)))
	+$(Q)$(MAKE) --no-print-directory EXTRESCUE_ARCH=arm64 OUT=$(call arch_out,arm64) src-programs
QEMU_USER := $(BUILD)/qemu-user
$(STAMPS)/qemu-user: $(call pin_stamp,qemu-user) | $(STAMPS)/host-deps $(BUILD)
	$(Q)rm -rf $(QEMU_USER) && mkdir -p $(QEMU_USER)
	$(Q)deb=$$(scripts/fetch qemu-user) && dpkg-deb --fsys-tarfile "$$deb" | tar -x -C $(QEMU_USER) ./usr/bin/qemu-aarch64
	$(Q)touch $@
# The middle guest of the VFIO tests (tests/nested.py): Debian 12's kernel
# and modules from the linux-l1 pin, our busybox, tests/vfio/l1-init. Its
# userland is this host's own root, read-only over 9p.
VFIO_L1 := $(BUILD)/vfio-l1
ifeq ($(DEBIAN_ARCH),amd64)
VFIO_L1_STAMP := $(STAMPS)/vfio-l1
# Debian 12's GRUB signed by Debian, for the Secure Boot boot of this ISO as
# a file on a multi-boot stick (tests/test_multistick.py).
GRUB_SIGNED := $(BUILD)/grub-signed
GRUB_SIGNED_STAMP := $(STAMPS)/grub-signed
$(GRUB_SIGNED_STAMP): $(call pin_stamp,grub-signed) | $(STAMPS)/host-deps $(BUILD)
	$(Q)rm -rf $(GRUB_SIGNED) && mkdir -p $(GRUB_SIGNED)
	$(Q)deb=$$(scripts/fetch grub-signed) && dpkg-deb --fsys-tarfile "$$deb" | \
	  tar -x -C $(GRUB_SIGNED) ./usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed
	$(Q)touch $@
$(VFIO_L1_STAMP): $(call pin_stamp,linux-l1) tests/vfio/build-l1 tests/vfio/l1-init tests/vfio/l1-modules \
		$(STAMPS)/busybox-built | $(STAMPS)/host-deps $(BUILD)
	$(Q)deb=$$(scripts/fetch linux-l1) && tests/vfio/build-l1 "$$deb" $(BUSYBOX_BIN) $(VFIO_L1)
	$(Q)touch $@
endif
.PHONY: test-failing
test-failing: all $(TEST_HOST_TOOLS) ## a failing disk (read errors in its ext4 inode table) on every controller, through qemu/smoke: the guest stays up and the report names the sector
	$(Q)a=0; rm -f $(OUT)/failing-matrix.tsv; \
	 $(PYTEST) -q -p no:cacheprovider -n $(TEST_JOBS) --dist loadgroup tests/test_failing_disks.py || a=$$?; \
	 echo "test-failing: controller, seconds of the smoke run, the guest, what smoke named"; \
	 sort $(OUT)/failing-matrix.tsv | awk -F'\t' '{printf "  %-13s %5s s  %-10s %s\n", $$1, $$3, $$2, $$4}'; \
	 [ $$a = 0 ]

.PHONY: test-undo-big
test-undo-big: all $(TEST_HOST_TOOLS) ## a repair that fills the undo manager's held batch, its disk's writes logged and replayed at every flush point, its calls traced block by block
	$(Q)a=0; rm -f $(OUT)/undo-replay.txt; \
	 $(PYTEST) -q -p no:cacheprovider -n $(TEST_JOBS) --dist loadgroup -m undo_big tests/test_undo_replay.py tests/test_undo_order.py || a=$$?; \
	 cat $(OUT)/undo-replay.txt 2>/dev/null; [ $$a = 0 ]

.PHONY: test-vfio
test-vfio: all $(VFIO_L1_STAMP) $(TEST_HOST_TOOLS) ## PCI passthrough for real: vfio-pci in a nested guest with an emulated IOMMU, each controller of the matrix (megasas, lsi53c895a, nvme, ahci) smoke-tested through it, the fault paths
	$(Q)$(PYTEST) -q -p no:cacheprovider -n $(TEST_JOBS) --dist loadgroup $(if $(VFIO_MARK),-m '$(VFIO_MARK)') tests/test_vfio.py

test: all $(STAMPS)/virt-firmware $(STAMPS)/qemu-user $(TEST_HOST_TOOLS) $(VFIO_L1_STAMP) $(GRUB_SIGNED_STAMP) test-arm64-programs ## run the whole test suite (boots, controllers, e2fsprogs suite, build checks), then its time table
	$(Q)a=0 b=0; mv -f $(OUT)/test-times.tsv $(OUT)/test-times-last.tsv 2>/dev/null || true; rm -f $(OUT)/undo-replay.txt; \
	 $(PYTEST) -q -p no:cacheprovider -n $(TEST_JOBS) --dist loadgroup -m 'serial or beside_serial' tests/ || a=$$?; \
	 EXTRESCUE_TIMES_APPEND=1 $(PYTEST) -q -p no:cacheprovider -n $(TEST_JOBS) --dist loadgroup -m 'not serial and not beside_serial and not vfio_matrix and not failing_matrix and not undo_big' tests/ || b=$$?; \
	 tests/timetable.py; \
	 [ $$a = 0 ] && [ $$b = 0 ]

test-times: ## the last make test's time table: the ten slowest tests, seconds per module
	$(Q)tests/timetable.py

test-build: | $(STAMPS)/host-deps ## only the build-system checks (no boot)
	$(Q)$(PYTEST) -q -p no:cacheprovider tests/test_build.py

test-server: $(ISO) ## only the real-server suite (a Debian 12 server broken and repaired)
	$(Q)$(PYTEST) -q -s -p no:cacheprovider tests/test_server.py tests/test_server_encrypted.py

test-boot: $(ISO) ## only the boot tests
	$(Q)$(PYTEST) -q -p no:cacheprovider tests/test_boot.py

run: $(ISO) $(STAMPS)/virt-firmware $(OUT)/disk-inuse ## boot the ISO in QEMU on this terminal (Ctrl-A x quits); ARGS= adds qemu/run options
	$(Q)qemu/run --iso $(ISO) $(ARGS)

smoke: $(ISO) $(OUT)/disk-inuse ## qemu/smoke: DISK=/dev/sdX [CTRL=ahci] and/or PCI=BDF; does the controller read the disks sanely
	$(Q)[ -n "$(DISK)$(PCI)" ] || { echo "smoke: name DISK=/dev/sdX (CTRL=controller) or PCI=0000:03:00.0" >&2; exit 2; }
	$(Q)qemu/smoke $(foreach d,$(DISK),--disk $(d)$(if $(CTRL),$(comma)if=$(CTRL))) $(foreach p,$(PCI),--pci $(p)) $(ARGS)

bench: $(ISO) $(STAMPS)/virt-firmware ## image sizes; seconds to a shell: BIOS, UEFI, UEFI with Secure Boot on (median of 5, TCG)
	$(Q)bench/bench-boot --iso $(ISO) --runs 5 --secureboot

bench-stick: $(ISO) ## seconds for write-stick to make a 1 GiB stick; boot from the plain ISO and from that stick as USB, side by side (median of 3, TCG)
	$(Q)bench/bench-stick $(ISO) 3

bench-multistick: $(ISO) ## boot from the ISO as a file on a GRUB multi-boot stick (exFAT) and from the ISO written whole, as USB, BIOS and UEFI, side by side (median of 3, TCG)
	$(Q)bench/bench-multistick $(ISO) 3

bench-fleet: $(ISO) ## a fleet check with the report alone and with rescue.metrics= and rescue.syslog= (Debian's servers on 127.0.0.1), side by side: seconds to report, power-off and PromQL answer (median of 3, TCG)
	$(Q)bench/bench-fleet 3

bench-fsck: $(STAMPS)/e2fsprogs-installed ## the image's e2fsck/debugfs against the host's: medians, ratios, sizes
	$(Q)bench/bench-fsck $(E2FSPROGS_OBJ)

bench-scratch: $(STAMPS)/e2fsprogs-installed ## the image's e2fsck with its tables in RAM and in scratch files: medians, slowdown, peak memory
	$(Q)bench/bench-scratch $(E2FSPROGS_OBJ)

bench-undo: $(STAMPS)/e2fsprogs-installed ## repairs with an undo file (written ahead of the volume) on a damaged 1 GiB ext4: medians, ratios, undo sizes, fsyncs; BENCH_UNDO_WITH=NAME=PATH adds another e2fsck
	$(Q)bench/bench-undo $(E2FSPROGS_OBJ) $(foreach w,$(BENCH_UNDO_WITH),--with $(w))

bench-kernel: $(ISO) ## bzImage size, option count, build time, seconds to each controller's disk
	$(Q)bench/bench-kernel

bench-io: $(ISO) $(SRC_OBJ)/host/iobench ## iobench's matrix in the image (TCG) and on a host loop device, side by side
	$(Q)mkdir -p $(OUT)/bench
	$(Q)bench/bench-io $(BENCH_IO_ARGS)

bench-assemble: $(ISO) ## storage tool sizes; seconds to the RAID1+LVM+LUKS2 stack assembled and checked (TCG)
	$(Q)mkdir -p $(OUT)/bench
	$(Q)bench/bench-assemble 3

bench-crash: $(ISO) ## seconds to a crashed 1 GiB ext4's files through the RAM overlay vs plain mount -o ro (TCG)
	$(Q)mkdir -p $(OUT)/bench
	$(Q)bench/bench-crash 5

bench-consoles: $(ISO) ## seconds to a shell on each console kind; what an unanswered passphrase costs (TCG)
	$(Q)mkdir -p $(OUT)/bench
	$(Q)bench/bench-consoles 3

bench-net: $(ISO) ## image size of the network; seconds to an ssh login and to a bare boot's report (TCG)
	$(Q)bench/bench-net 3

bench-netboot: all ## sizes of out/netboot/; seconds to a shell on each network boot path, and to a fleet check's report (TCG)
	$(Q)bench/bench-netboot 3

# Two clean builds from the same commit must give the same ISO, byte for byte.
repro-check: | $(STAMPS)/host-deps ## build twice from clean, the second as another user in another folder, umask, locale and time zone, ccache off; compare (diffoscope on a difference)
	$(Q)$(NO_JOBSERVER) REPRO_ARCHES="$(strip $(EXTRESCUE_ARCH) $(OTHER_ARCHES))" tests/repro-check

SUITE ?= trixie
check-fresh: | $(STAMPS)/host-deps ## build and test the current commit in a fresh Debian root: SUITE=bookworm|trixie
	$(Q)$(NO_JOBSERVER) scripts/fresh-chroot $(SUITE)
