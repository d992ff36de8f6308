"""Fixtures and process setup for the core tests."""

from __future__ import annotations

import pytest

_XDIST_VARS = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(autouse=True)
def _inner_runs_are_top_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """When these tests run under ``-n 2`` themselves, the pytest runs they start must
    not inherit the outer worker's xdist variables (a subprocess would think it is a worker)."""
    for name in _XDIST_VARS:
        monkeypatch.delenv(name, raising=False)
