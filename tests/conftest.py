import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness import Guest  # noqa: E402


@pytest.fixture
def guest(request):
    """Factory: guest(name, args) starts a boot; logs of passing tests are removed."""
    made = []

    def make(name, args, boot_timeout=120):
        g = Guest(name, args, boot_timeout).start()
        made.append(g)
        return g

    yield make
    failed = getattr(request.node, "rep_call", None) is None or request.node.rep_call.failed
    for g in made:
        g.kill()
        for path in [g.log_path] + [c.log_path for c in g.consoles]:
            if not failed and os.path.exists(path):
                os.unlink(path)


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
    if rep.failed:
        failed_modules.add(item.module.__name__)


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
    root = os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir()
    st = os.statvfs(root)
    free = st.f_bavail * st.f_frsize / 2**30
    if free < NEED_FREE_GIB and not session.config.option.collectonly:
        pytest.exit(f"tests: {root} has {free:.1f} GiB free, the suite needs {NEED_FREE_GIB} GiB; "
                    "free some (old runs are in pytest-of-*) or set TMPDIR to a roomier disk", returncode=2)


def pytest_configure(config):
    config.addinivalue_line("markers", "server: the real-server end-to-end suite (make test-server)")
