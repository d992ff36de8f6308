"""Shared by the assertions task's tests: suites written into pytester's folder, the
loopback judge, and the family's entry point while the environment predates it.

The development venv's metadata lists the families of the tree it was installed from;
until it is reinstalled from a tree that registers ``assertions`` (pyproject.toml), a
``.dist-info`` folder on ``sys.path`` and ``PYTHONPATH`` (pytester's subprocesses and
xdist workers inherit it) registers it exactly as an installed distribution would.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_evals.model.case_result import CaseResult
from pytest_evals.registry import family_registry
from pytest_evals.testing.fake_openai import FakeOpenAI, last_user_message

GROUP = "pytest_evals.families"


def _register_family() -> None:
    if any(ep.name == "assertions" for ep in entry_points(group=GROUP)):
        return
    root = Path(tempfile.mkdtemp(prefix="evals-assertions-family-"))
    info = root / "pytest_evals_assertions_dev-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pytest-evals-assertions-dev\nVersion: 0.1\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text(
        f"[{GROUP}]\nassertions = pytest_evals.families.assertions.family\n", encoding="utf-8")
    sys.path.append(str(root))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(root)]))
    family_registry.registry.cache_clear()


_register_family()


def write_suite(
    path: Path, cases: list[Any], name: str = "answers", asserts: list[Any] | None = None, **fields: Any
) -> Path:
    """``<name>.eval.yaml`` + ``<name>.jsonl`` in ``path``; ``asserts`` is the suite's ``assert:``."""
    raw: dict[str, Any] = {"task": "assertions", "input_path": f"{name}.jsonl"}
    if asserts is not None:
        raw["assert"] = asserts
    raw.update(fields)
    (path / f"{name}.jsonl").write_text(
        "".join((c if isinstance(c, str) else json.dumps(c, ensure_ascii=False)) + "\n" for c in cases),
        encoding="utf-8",
    )
    suite = path / f"{name}.eval.yaml"
    suite.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return suite


def read_json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def suite_summary(summary: dict[str, Any], name: str = "answers") -> dict[str, Any]:
    for suite in summary["suites"]:
        if suite["name"] == name:
            found: dict[str, Any] = suite
            return found
    raise AssertionError(f"no suite {name!r} in {[s['name'] for s in summary['suites']]}")


def inline_results(reprec: pytest.HookRecorder) -> dict[str, CaseResult]:
    return {call.result.case_id: call.result for call in reprec.getcalls("pytest_evals_case_result")}


Responder = Callable[[dict[str, Any]], Any]


@dataclass
class JudgeServer:
    server: FakeOpenAI
    #: Every request body the judge received, in order.
    requests: list[dict[str, Any]] = field(default_factory=list)
    reply: Responder = lambda body: json.dumps({"score": 1.0, "reason": "fine"})

    def prompts(self) -> list[str]:
        return [last_user_message(b) for b in self.requests]


@pytest.fixture
def judge_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[JudgeServer]:
    """A loopback OpenAI-compatible judge; ``judge_server.reply`` answers each request
    (its body in, the reply text out). The runs a test starts reach it through
    ``OPENAI_BASE_URL`` and cache under ``tmp_path``."""
    holder: list[JudgeServer] = []

    def respond(body: dict[str, Any]) -> Any:
        holder[0].requests.append(body)
        return holder[0].reply(body)

    with FakeOpenAI(responder=respond) as server:
        js = JudgeServer(server)
        holder.append(js)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-assertions-test-key")
        monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(tmp_path / "llm-cache"))
        yield js
