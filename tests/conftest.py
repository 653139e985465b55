import os
import sys

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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def pytest_configure(config):
    config.addinivalue_line("markers", "server: the real-server end-to-end suite (make test-server)")
