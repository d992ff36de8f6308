"""Fixtures and process setup for the core tests."""

from __future__ import annotations

import contextlib

import pytest

# Hypothesis' pytest plugin (a dev dependency) imports hypothesis lazily, in its terminal
# summary. Inside an in-process run that froze the heap (test_core_run_memory), that
# first import's check of trio's registered Random (gc.get_referrers, blind to frozen
# objects) warns, and filterwarnings=error fails whichever test imports it first
# (test_core_lazy failed so on main too). Imported here, up front, the check passes.
with contextlib.suppress(ImportError):
    import hypothesis  # noqa: F401

_XDIST_VARS = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(autouse=True)
def _inner_runs_are_top_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """When these tests run under ``-n 2`` themselves, the pytest runs they start must
    not inherit the outer worker's xdist variables (a subprocess would think it is a worker)."""
    for name in _XDIST_VARS:
        monkeypatch.delenv(name, raising=False)
