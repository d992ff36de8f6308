from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_evals.families.rag.task import RagAnswers
from pytest_evals.model.case_result import CaseResult
from pytest_evals.suites.suite_config import load_suite
from pytest_evals.tasks import TASK_CATALOG
from pytest_evals.testing.fake_openai import FakeOpenAI

from .judge_script import ScriptedJudge
from .samples import CASE


@pytest.fixture
def make_task(tmp_path: Path) -> Callable[..., RagAnswers]:
    """``make_task(metrics=[...], cases=[...], **suite_fields)`` -> a loaded RagAnswers task."""

    def make(cases: list[Any] | None = None, **fields: Any) -> RagAnswers:
        raw = {"task": "rag_answers", "input_path": "cases.jsonl", "metrics": ["relevance"], **fields}
        (tmp_path / "cases.jsonl").write_text(
            "".join(json.dumps(c) + "\n" for c in (cases if cases is not None else [CASE])), encoding="utf-8"
        )
        path = tmp_path / "rag.eval.yaml"
        path.write_text(yaml.safe_dump(raw), encoding="utf-8")
        suite = load_suite(path, "rag.eval.yaml", catalog=TASK_CATALOG)
        task = RagAnswers(suite)
        return task

    return make


@dataclass
class JudgeServer:
    server: FakeOpenAI
    judge: ScriptedJudge

    def script(self, script: dict[tuple[str, str], list[str] | str]) -> None:
        self.judge.script = {k: ([v] if isinstance(v, str) else list(v)) for k, v in script.items()}


@pytest.fixture
def judge_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[JudgeServer]:
    """A loopback OpenAI-compatible server answering as a scripted judge; the pytest runs
    started by the test reach it through ``OPENAI_BASE_URL`` and cache in ``tmp_path``."""
    judge = ScriptedJudge()
    with FakeOpenAI(responder=judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-rag-test-key")
        monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(tmp_path / "llm-cache"))
        yield JudgeServer(server, judge)


def write_suite(pytester: pytest.Pytester, cases: list[Any], name: str = "rag", **fields: Any) -> Path:
    """``<name>.eval.yaml`` + ``<name>.jsonl`` in the pytester directory."""
    raw = {"task": "rag_answers", "input_path": f"{name}.jsonl", "metrics": ["relevance"], **fields}
    (pytester.path / f"{name}.jsonl").write_text(
        "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8"
    )
    path = pytester.path / f"{name}.eval.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def inline_results(reprec: pytest.HookRecorder) -> dict[str, CaseResult]:
    """case id -> the result that rode on its report."""
    # Reports keep only the light part; the full results (with details) come through
    # the pytest_evals_case_result hook.
    return {call.result.case_id: call.result for call in reprec.getcalls("pytest_evals_case_result")}
