"""qemu/oops: the kernel's oops, panic and warning lines read from a console
log, as qemu/smoke reports a guest that came down or warned. The logs are
shaped as Linux prints them (x86_64 and arm64, with and without symbols)."""
import pytest

from runner import oops

pytestmark = pytest.mark.beside_serial

X86_GPF = """\
[   38.512204] sd 0:0:0:0: [sda] tag#3 ABORT operation started
[   38.601733] Oops: general protection fault, probably for non-canonical address 0x1f00000000a8c000: 0000 [#1] SMP PTI
[   38.602001] CPU: 0 UID: 0 PID: 0 Comm: swapper/0 Not tainted 7.2.6-extrescue #1
[   38.602125] RIP: 0010:sym_interrupt+0x4ce/0x1a30
[   38.602200] Code: 48 8b 04 c8 <48> 8b 3c c8
[   38.602310] RSP: 0018:ffffa8c8c0003e88 EFLAGS: 00010046
[   38.602400] Call Trace:
[   38.602411]  <IRQ>
[   38.602420]  ? die_addr+0x36/0x90
[   38.602431]  ? exc_general_protection+0x1b5/0x3f0
[   38.602440]  ? asm_exc_general_protection+0x26/0x30
[   38.602451]  ? sym_interrupt+0x4ce/0x1a30
[   38.602460]  sym53c8xx_intr+0x45/0x80
[   38.602470]  __handle_irq_event_percpu+0x4a/0x170
[   38.602480]  handle_irq_event+0x38/0x80
[   38.602490]  handle_fasteoi_irq+0x78/0x200
[   38.602500]  __common_interrupt+0x40/0xb0
[   38.602510]  common_interrupt+0x7c/0xa0
[   38.602520]  </IRQ>
[   38.602600] ---[ end trace 0000000000000000 ]---
[   38.602700] Kernel panic - not syncing: Fatal exception in interrupt
[   38.602800] ---[ end Kernel panic - not syncing: Fatal exception in interrupt ]---
"""

ARM64_NULL = """\
[    9.100000] Unable to handle kernel NULL pointer dereference at virtual address 0000000000000010
[    9.100100] Internal error: Oops: 0000000096000004 [#1] SMP
[    9.100200] pc : scsi_queue_rq+0x58/0x7a0
[    9.100300] lr : blk_mq_dispatch_rq_list+0x120/0x6c0
[    9.100400] Call trace:
[    9.100410]  scsi_queue_rq+0x58/0x7a0
[    9.100420]  blk_mq_dispatch_rq_list+0x120/0x6c0
[    9.100430]  __blk_mq_sched_dispatch_requests+0xb0/0x160
[    9.100500] ---[ end trace 0000000000000000 ]---
"""

NO_SYMBOLS = """\
[   12.000000] BUG: kernel NULL pointer dereference, address: 0000000000000008
[   12.000100] RIP: 0010:0xffffffff8a35c1de
[   12.000200] Call Trace:
[   12.000210]  <TASK>
[   12.000220]  ? 0xffffffff8a2f0a11
[   12.000300] ---[ end trace 0000000000000000 ]---
"""

WARNING = """\
[    8.169773] WARNING: CPU: 0 PID: 1 at kernel/dma/mapping.c:533 dma_free_attrs+0x3c/0x60
[    8.170832] RIP: 0010:dma_free_attrs+0x3c/0x60
[    8.171000] Call Trace:
[    8.171010]  <TASK>
[    8.171020]  ? __warn+0x81/0x130
[    8.171030]  ? report_bug+0x171/0x1a0
[    8.171040]  ? handle_bug+0x41/0x70
[    8.171050]  sym_mfree_dma+0x5c/0xa0
[    8.171060]  sym_free_resources+0x33/0x60
[    8.171200] ---[ end trace 0000000000000000 ]---
"""


def test_a_fault_in_an_interrupt_handler_is_named_with_its_callers():
    said = oops.summary(X86_GPF)
    assert said.startswith("Oops: general protection fault, probably for non-canonical address")
    # Where it happened, then who called, without the oops's own machinery.
    assert "; at sym_interrupt+0x4ce/0x1a30; called from sym_interrupt+0x4ce/0x1a30, sym53c8xx_intr+0x45/0x80, " \
           "__handle_irq_event_percpu+0x4a/0x170, handle_irq_event+0x38/0x80, handle_fasteoi_irq+0x78/0x200, " \
           "__common_interrupt+0x40/0xb0" in said
    assert "die_addr" not in said and "exc_general_protection" not in said


def test_the_first_of_several_is_told():
    # The panic that follows the oops is not the news: the oops is.
    assert not oops.summary(X86_GPF).startswith("Kernel panic")
    assert oops.summary(X86_GPF.split("[   38.601733]")[0]) is None


def test_arm64_pc_and_call_trace():
    said = oops.summary(ARM64_NULL)
    assert said == ("Unable to handle kernel NULL pointer dereference at virtual address 0000000000000010; "
                    "at scsi_queue_rq+0x58/0x7a0; called from scsi_queue_rq+0x58/0x7a0, "
                    "blk_mq_dispatch_rq_list+0x120/0x6c0, __blk_mq_sched_dispatch_requests+0xb0/0x160")


def test_without_symbols_only_the_headline():
    assert oops.summary(NO_SYMBOLS) == "BUG: kernel NULL pointer dereference, address: 0000000000000008"


def test_a_warning_names_its_place_and_callers():
    assert oops.summary(WARNING) == (
        "WARNING: CPU: 0 PID: 1 at kernel/dma/mapping.c:533 dma_free_attrs+0x3c/0x60; at dma_free_attrs+0x3c/0x60; "
        "called from sym_mfree_dma+0x5c/0xa0, sym_free_resources+0x33/0x60")


def test_a_clean_log_has_nothing():
    assert oops.summary("[    1.0] sd 0:0:0:0: [sda] 131072 512-byte logical blocks\n") is None
