"""Fixtures of the batch-mode tests: the loopback server with files/batches endpoints.

The HaluEval judge (right with a known probability, logging what it answered) is the
one the HaluEval suite tests use, loaded from their module so both test the same thing.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_evals.testing.fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parents[2]
DATA_DIR = REPO.parent / "shared" / "data" / "halueval"


def _halueval_support() -> ModuleType:
    name = "halueval_suite_support"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "tests" / "halueval" / "test_halueval_suite.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


support = _halueval_support()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    assert (DATA_DIR / "qa_data.json").is_file(), f"HaluEval data missing at {DATA_DIR}"
    return DATA_DIR


@pytest.fixture(scope="module")
def truth(data_dir: Path) -> Any:
    return support.truth_table(data_dir)


@pytest.fixture
def judge_server(truth: Any) -> Iterator[tuple[FakeOpenAI, Any]]:
    """A fresh server per test whose responder is the logging HaluEval judge."""
    judge = support.Judge(truth)
    with FakeOpenAI(responder=judge) as server:
        yield server, judge


SUITE = """\
task: halueval
data_dir: {data_dir}
sample: {sample}
seed: 11
thresholds:
  overall:
    accuracy: {{min: 0.5}}
"""


def write_suite(pytester: pytest.Pytester, data_dir: Path, sample: int, extra: str = "") -> None:
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=data_dir, sample=sample) + extra)


def run(
    pytester: pytest.Pytester, server: FakeOpenAI, name: str, *args: str, cache: str = "cache"
) -> tuple[pytest.RunResult, dict[str, Any]]:
    """One pytest run of the suite against ``server``; returns its result and summary."""
    out = pytester.path / f"{name}.json"
    # In process unless the run has xdist workers: a process start costs more than the run.
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    result = runner(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", server.base_url,
        "--evals-model", "judge-model", "--evals-cache-dir", str(pytester.path / cache),
        "--evals-json", str(out), "--evals-batch-poll", "0.05", *args,
    )
    assert out.is_file(), result.stdout.str()[-3000:] + result.stderr.str()[-3000:]
    return result, json.loads(out.read_text(encoding="utf-8"))


expected_confusion = support.expected_confusion
reported_confusion = support.reported_confusion
