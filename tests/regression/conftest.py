"""Fixtures for the regression-gate tests."""

from __future__ import annotations

import pytest

_XDIST_VARS = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(autouse=True)
def _inner_runs_are_top_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytest runs must not think they are xdist workers of the outer run, nor
    append to a GitHub step summary of the machine running these tests."""
    for name in (*_XDIST_VARS, "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
