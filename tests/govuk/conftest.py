from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rag.judge_script import ScriptedJudge

from pytest_evals.testing.fake_openai import FakeOpenAI

_XDIST_VARS = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(autouse=True)
def _inner_runs_are_top_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytest runs must not think they are xdist workers when the suite runs under -n."""
    for name in _XDIST_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[FakeOpenAI, ScriptedJudge]]:
    """A loopback OpenAI-compatible endpoint (the shape of a Bedrock gateway) as the judge."""
    scripted = ScriptedJudge()
    with FakeOpenAI(responder=scripted) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-govuk-test-key")
        monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(tmp_path / "llm-cache"))
        yield server, scripted
