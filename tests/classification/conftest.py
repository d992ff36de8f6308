from __future__ import annotations

import pytest

_XDIST_VARS = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(autouse=True)
def _inner_runs_are_top_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytest runs must not think they are xdist workers when the suite runs under -n."""
    for name in _XDIST_VARS:
        monkeypatch.delenv(name, raising=False)
