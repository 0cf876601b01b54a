"""Fixtures for the asyncbpf-record integration tests: interpreter discovery, the tool
binary, root check. Tests that take an `interp` argument run once per interpreter."""
import os
import stat

import pytest

from helpers import INTERPRETERS, RECORD, REPO, UNSUPPORTED


def _params(interps):
    return [
        pytest.param(i, id=i.id, marks=[pytest.mark.skip(reason=i.missing)] if i.missing else [])
        for i in interps
    ]


def pytest_generate_tests(metafunc):
    if "interp" in metafunc.fixturenames:
        metafunc.parametrize("interp", _params(INTERPRETERS), scope="module")
    if "old_interp" in metafunc.fixturenames:
        metafunc.parametrize("old_interp", _params(UNSUPPORTED), scope="module")


def _binary():
    if not os.path.exists(RECORD):
        pytest.skip("%s not built (run make)" % os.path.relpath(RECORD, REPO))
    if not os.stat(RECORD).st_mode & stat.S_IXUSR:
        pytest.skip("%s is not executable" % RECORD)
    return RECORD


@pytest.fixture(scope="session")
def record_bin():
    """The asyncbpf-record binary, for tests that need no privileges."""
    return _binary()


@pytest.fixture(scope="session")
def root_record_bin():
    """The asyncbpf-record binary, for tests that record (BPF needs root)."""
    path = _binary()
    if os.geteuid() != 0:
        pytest.skip("needs root: BPF programs and perf events need CAP_BPF and CAP_PERFMON")
    return path
