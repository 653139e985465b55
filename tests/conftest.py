import os
import resource
import shutil
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
# qemu/run's and qemu/smoke's package (qemu/runner/), whose parts some tests import.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "qemu"))
import harness  # noqa: E402
from harness import Guests  # noqa: E402
import server  # noqa: E402
import server_breaks  # noqa: E402
import timetable  # noqa: E402

# Direct kernel boots take the initramfs before compression (see harness.py).
harness.DIRECT_INITRD = harness.RAW_INITRD


@pytest.fixture
def guest(request):
    """Factory: guest(name, args) starts a boot; logs of passing tests are removed."""
    guests = Guests()
    yield guests
    guests.finish(keep_logs=getattr(request.node, "rep_call", None) is None or request.node.rep_call.failed)


# Disk images make a whole run write about 17 GiB; kept to the end, they filled
# a shared CI disk. A test's folder goes when it passes, a module's shared
# folders (the server images) when the module ends with nothing failed; what a
# failure touched stays for a look.
NEED_FREE_GIB = 8
failed_modules = set()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
    if rep.when == "teardown" and hasattr(item, "_cpu_before"):
        rep.user_properties.append(("cpu", _cpu_seconds() - item._cpu_before))
    if rep.failed:
        failed_modules.add(item.module.__name__)


def _cpu_seconds():
    """CPU seconds of this process and every child it has reaped: the
    guests (pexpect waits for QEMU) and host tools."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


# A test's CPU seconds beside its wall seconds in the time table: where the
# two part, the test waits (a timeout, a sleep, an idle guest) and leaves
# its core unused.
@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    item._cpu_before = _cpu_seconds()
    yield


@pytest.fixture(autouse=True)
def _drop_passing_test_folder(request):
    yield
    rep = getattr(request.node, "rep_call", None)
    folder = request.node.funcargs.get("tmp_path")
    if folder is not None and rep is not None and not rep.failed:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def _drop_module_folders(request, tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    before = set(os.listdir(base))
    yield
    if request.module.__name__ in failed_modules:
        return
    for name in set(os.listdir(base)) - before:
        path = os.path.join(base, name)
        if os.path.islink(path):      # pytest's "<name>current" pointers
            os.unlink(path)
        else:
            shutil.rmtree(path, ignore_errors=True)


def pytest_sessionstart(session):
    global _started
    _started = time.monotonic()
    root = os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir()
    st = os.statvfs(root)
    free = st.f_bavail * st.f_frsize / 2**30
    if free < NEED_FREE_GIB and not session.config.option.collectonly:
        pytest.exit(f"tests: {root} has {free:.1f} GiB free, the suite needs {NEED_FREE_GIB} GiB; "
                    "free some (old runs are in pytest-of-*) or set TMPDIR to a roomier disk", returncode=2)


def pytest_configure(config):
    config.addinivalue_line("markers", "server: the real-server end-to-end suite (make test-server)")
    config.addinivalue_line("markers", "serial: rebuilds what other tests boot; runs before the parallel part, "
                            "one worker to itself")
    config.addinivalue_line("markers", "vfio_matrix: the VFIO matrix's controllers after megasas (make test-vfio)")
    config.addinivalue_line("markers", "failing_matrix: a failing disk on every controller (make test-failing)")
    config.addinivalue_line("markers", "undo_big: a repair that fills the undo batch, replayed (make test-undo-big)")
    config.addinivalue_line("markers", "beside_serial: neither boots the image nor runs make in the tree; "
                            "runs beside the serial tests")


# Every module fixture that takes a server from the image cache, and its name there.
CACHED = {**server.CACHED_SERVERS, **{f: b.cache_name for f, b in server_breaks.BROKEN.items()}}


# TEST_JOBS guests at a time (pytest-xdist, --dist loadgroup): a test that uses a
# module-scoped fixture (a preparation boot) runs on the same worker as the
# other tests of its module that use it, so the fixture is made once; every
# other test goes wherever a worker is free. The longest units (a group, or
# one test) are handed out first, by their times in the last run here (else
# tests/durations), so no long one is left for the end; a serial test comes
# before all, so that the tests beside it fill the other workers and not the
# time after it.
#
# Module fixtures a worker can make for itself do not hold a module together:
# the built servers come from the image cache under a lock
# (tests/image_cache.py), so a worker that needs one uses another's;
# the program fixtures of the unit tests run make for a build of ours that
# make test built already (harness.src_program, under a lock); "golden" is
# one mke2fs on the host; "arm64_built" only looks for the arm64 ISO.
CHEAP_SHARED = {"tmp_path_factory", "_drop_module_folders", "worker_id", "testrun_uid",
                "extscan", "cmdline", "authkeys", "report", "inroot", "golden", "arm64_built", "failing",
                "forward", "http_put"} | set(CACHED)
# A server not in the cache yet holds its tests together instead: spread,
# every worker would start on it, one building for minutes, the others
# waiting on the cache's lock with their cores unused. Seconds a build adds to
# its group's expected time (each cold server its tests use), for the order.
BUILD_GUESS = 300
# A cached server made from another: while both are cold its tests join the
# base's group, or their worker would only wait on the base's lock.
BUILT_FROM = {"crashed_server": "server", **{f: b.base for f, b in server_breaks.BROKEN.items()}}


def _cached_server(info, name):
    """Whether fixture NAME is one that takes a server from the image cache
    (test_netboot's own "server" is its HTTP server)."""
    return name in CACHED and any(
        getattr(sys.modules.get(d.func.__module__), "build_once", None) is server.build_once
        for d in info.name2fixturedefs.get(name) or ())


def _group(item, cold):
    """The xdist group ITEM must share a worker with, or None."""
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(info, "names_closure", []):
        if name in cold and _cached_server(info, name):
            base = BUILT_FROM.get(name)
            return "server-image-" + (base if base in cold else name)
        if name in CHEAP_SHARED:
            continue
        if any(d.scope in ("module", "package", "session") for d in info.name2fixturedefs.get(name) or ()):
            return item.module.__name__
    return None


# Before xdist reads the groups (its own hook runs first otherwise).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    per_module, per_test = timetable.expected_module_seconds(), timetable.expected_test_seconds()
    used = {n for i in items if getattr(i, "_fixtureinfo", None)
            for n in i._fixtureinfo.names_closure if _cached_server(i._fixtureinfo, n)}
    cold = {f for f, name in CACHED.items() if f in used and not server.in_cache(name)}
    per_module_count = {}
    for item in items:
        per_module_count[item.module.__name__] = per_module_count.get(item.module.__name__, 0) + 1

    def guess(item):
        m = item.module.__name__
        return per_test.get(item.nodeid, per_module.get(m, 60) / per_module_count[m])
    groups, units = {}, []
    for item in items:
        g = _group(item, cold)
        if g is None:
            units.append((guess(item), [item]))
        else:
            groups.setdefault(g, []).append(item)
    for g, tests in groups.items():
        for item in tests:
            item.add_marker(pytest.mark.xdist_group(g))
        builds = {n for i in tests for n in i._fixtureinfo.names_closure if n in cold}
        units.append((sum(guess(i) for i in tests) + BUILD_GUESS * len(builds), tests))
    units.sort(key=lambda u: (not any(i.get_closest_marker("serial") for i in u[1]), -u[0]))
    items[:] = [item for _, tests in units for item in tests]


# Seconds (setup + call + teardown), outcome and CPU seconds per test. Under xdist the
# workers' reports reach the controller too, which alone writes the table.
_times = {}
_started = time.monotonic()


def pytest_runtest_logreport(report):
    seconds, outcome, cpu = _times.get(report.nodeid, (0.0, "passed", None))
    cpu = dict(report.user_properties).get("cpu", cpu)
    if report.failed:
        outcome = "failed"
    elif report.skipped and outcome == "passed":
        outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    elif report.when == "call" and hasattr(report, "wasxfail"):
        outcome = "xpassed"
    _times[report.nodeid] = (seconds + report.duration, outcome, cpu)


def pytest_unconfigure(config):
    # A benchmark's runs (EXTRESCUE_TIMES_OFF) leave the table of the last make test alone.
    if not hasattr(config, "workerinput") and not config.option.collectonly \
            and not os.environ.get("EXTRESCUE_TIMES_OFF"):
        timetable.record(_times, append=bool(os.environ.get("EXTRESCUE_TIMES_APPEND")),
                         wall=time.monotonic() - _started)
