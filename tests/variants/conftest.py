"""Fixtures of the variant tests (the loopback server: variant_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from variant_helpers import responder

from pytest_evals.testing.fake_openai import FakeOpenAI
from tests.browser_support import _chromium_session, browser  # noqa: F401  (fixtures)

_XDIST_VARS = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(autouse=True)
def _inner_runs_are_top_level(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (*_XDIST_VARS, "GITHUB_STEP_SUMMARY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(tmp_path / "default-cache"))


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=responder) as srv:
        yield srv


