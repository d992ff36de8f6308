"""Fixtures of the hardening tests: hostile endpoints on loopback, clean inner runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .hostile import HostileServer

_XDIST_VARS = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(autouse=True)
def _inner_runs_are_top_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytest runs must not think they are xdist workers of an outer -n run."""
    for name in _XDIST_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with HostileServer() as server:
        yield server
