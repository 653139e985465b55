"""qemu/smoke's verdicts on a guest's answer whose battery stalled: the
check of the step the guest stopped it at fails and says after how long,
the checks of the later steps are absent (never asked), the earlier ones
are judged as usual. The answers are shaped as rescue-smoke --json prints
them."""
import pytest

from runner.verdicts import verdicts

pytestmark = pytest.mark.beside_serial

FIRST, LAST = "a" * 64, "b" * 64
VIEW = {"path": "/tmp/disk.img", "if": "am53c974", "size": 64 << 20, "logical": 512, "physical": 512,
        "first_mib": FIRST, "last_mib": LAST, "serial": "disk0", "mode": "ro"}


def answer(**over):
    a = {"disk": "sda", "serial": "disk0", "controller": "0000:00:04.0", "driver": "am53c974", "via": "sd",
         "size": 64 << 20, "logical": 512, "physical": 512, "ro": 1, "write": "refused",
         "first_mib": FIRST, "last_mib": LAST, "irq": "INTx (irq 11), 30 delivered",
         "read": {"sequential": {"error": {"sector": 4096, "message": "Input/output error"}}},
         "ext": [], "health": None, "stalled": None,
         "kernel_log": ["sd 0:0:0:0: [sda] tag#0 timing out command, waited 15s"]}
    a.update(over)
    return a


def test_a_battery_stalled_in_e2fsck_fails_ext_and_asks_nothing_later():
    v = verdicts(VIEW, answer(stalled={"step": "ext", "seconds": 110}))
    assert v["ext"] == (False, "no answer within 110 s: the disk's battery stalled here and was stopped")
    assert "health" not in v
    # What it answered before the stall is judged as usual.
    assert v["first MiB"][0] and v["last MiB"][0] and v["mode"][0]
    assert v["read"] == (False, "sequential read error at sector 4096: Input/output error")
    assert not v["kernel log"][0]


def test_a_battery_stalled_before_its_first_read_has_only_what_sysfs_said():
    v = verdicts(VIEW, answer(first_mib=None, last_mib=None, read=None, stalled={"step": "first MiB",
                                                                                          "seconds": 110}))
    assert v["first MiB"] == (False, "no answer within 110 s: the disk's battery stalled here and was stopped")
    assert not {"last MiB", "read", "ext", "health"} & set(v), v
    assert v["found"][0] and v["size"][0] and v["blocks"][0] and v["mode"][0]


def test_a_battery_stalled_in_its_write_probe_fails_the_mode_check():
    v = verdicts(VIEW, answer(write="-", first_mib=None, last_mib=None, read=None,
                                    stalled={"step": "write probe", "seconds": 30}))
    assert v["mode"] == (False, "no answer within 30 s: the disk's battery stalled here and was stopped")
    assert not {"first MiB", "last MiB", "read", "ext", "health"} & set(v), v


def test_a_battery_that_ended_is_judged_whole():
    v = verdicts(VIEW, answer(ext=[{"kind": "ext4", "device": "/dev/sda", "e2fsck": 8}],
                                    health="n/a: no SMART answer"))
    assert set(v) == {"found", "driver", "size", "blocks", "first MiB", "last MiB", "read", "ext", "health",
                      "kernel log", "mode"}
    assert v["ext"] == (False, "/dev/sda ext4 e2fsck -fn 8")
    assert v["health"][0]


def test_a_mib_with_a_read_error_is_unreadable_not_different():
    v = verdicts(VIEW, answer(first_mib="unreadable"))
    assert v["first MiB"] == (False, "unreadable: a read error in it")


def test_reads_never_answered_fail_and_health_never_asked_is_n_a():
    v = verdicts(VIEW, answer(first_mib=None, read=None, health=None))
    assert v["first MiB"] == (False, "not read")
    assert v["read"] == (False, "not read")
    assert v["health"] == (True, "n/a: not asked")


def test_behind_a_passed_controller_an_unread_mib_is_no_match_for_itself():
    """With --pci the host's view of a disk is the guest's own answer."""
    a = answer(first_mib="unreadable", last_mib=None)
    view = {k: a[k] for k in ("size", "logical", "physical", "first_mib", "last_mib")} | {"serial": None}
    v = verdicts(view, a)
    assert v["first MiB"] == (False, "unreadable: a read error in it")
    assert v["last MiB"] == (False, "not read")
