"""Cached cases are evaluated on pytest's thread until one needs the model.

What a user sees: the same results, the same request and cache-hit counts (an
attempt that stopped at a cache miss is not counted twice), whatever mix of cached
and uncached cases a run has, plainly and under ``-n 2``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.testing.fake_openai import FakeOpenAI
from pytest_evals.worker.case_runner import CaseRunner, get_runner

SUITE = """\
task: halueval
data_dir: {data_dir}
tasks: {tasks}
sample: {sample}
seed: 5
"""


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder="yes") as srv:
        yield srv


def run(
    pytester: pytest.Pytester, server: FakeOpenAI, data_dir: Path, tasks: str, sample: str, name: str
) -> tuple[pytest.HookRecorder, dict[str, Any], CaseRunner]:
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=data_dir, tasks=tasks, sample=sample))
    out = pytester.path / f"{name}.json"
    server.reset()
    reprec = pytester.inline_run(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", server.base_url,
        "--evals-model", "judge", "--evals-cache-dir", str(pytester.path / "cache"), "--evals-json", str(out),
    )
    config = reprec.getcalls("pytest_sessionfinish")[0].session.config
    return reprec, json.loads(out.read_text(encoding="utf-8")), get_runner(config)


def case_results(reprec: pytest.HookRecorder) -> dict[str, tuple[str, dict[str, Any], str]]:
    return {
        c.result.case_id: (c.result.status, c.result.data, c.result.details.get("reply"))
        for c in reprec.getcalls("pytest_evals_case_result")
    }


def test_cached_cases_run_inline_until_a_case_needs_the_model(
    pytester: pytest.Pytester, server: FakeOpenAI, data_dir: Path
) -> None:
    # Cold: the first case misses, so every case goes through the prefetcher.
    cold_rec, cold, state = run(pytester, server, data_dir, "[qa]", "12", "cold")
    assert server.stats()["received"] == 12
    assert state.inline_cases == 0
    assert cold["llm"]["requests"] == 12 and cold["llm"]["cache_hits"] == 0

    # The 12 qa cases are cached and come first; the dialogue cases are new.
    rec, mixed, state = run(pytester, server, data_dir, "[qa, dialogue]", "{qa: 12, dialogue: 8}", "mixed")
    assert server.stats()["received"] == 8
    assert state.inline_cases == 12
    assert mixed["llm"]["cache_hits"] == 12 and mixed["llm"]["requests"] == 8
    results = case_results(rec)
    assert len(results) == 20
    cold_results = case_results(cold_rec)
    assert {k: v for k, v in results.items() if k.startswith("qa-")} == cold_results
    assert mixed["suites"][0]["metrics"]["qa"] == cold["suites"][0]["metrics"]["qa"]

    # Everything cached: no request, every case inline, the same numbers.
    rec, warm, state = run(pytester, server, data_dir, "[qa, dialogue]", "{qa: 12, dialogue: 8}", "warm")
    assert server.stats()["received"] == 0
    assert state.inline_cases == 20
    assert warm["llm"]["cache_hits"] == 20 and warm["llm"]["requests"] == 0
    assert case_results(rec) == results
    assert warm["suites"][0]["metrics"] == mixed["suites"][0]["metrics"]

    # The same on two workers.
    server.reset()
    out = pytester.path / "two.json"
    pytester.runpytest_subprocess(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "-n", "2", "--evals-base-url", server.base_url,
        "--evals-model", "judge", "--evals-cache-dir", str(pytester.path / "cache"), "--evals-json", str(out),
    )
    two = json.loads(out.read_text(encoding="utf-8"))
    assert server.stats()["received"] == 0
    assert two["llm"]["cache_hits"] == 20 and two["llm"]["requests"] == 0
    assert two["suites"][0]["metrics"] == warm["suites"][0]["metrics"]


def test_an_erroring_case_is_evaluated_again_on_the_engine_and_the_rest_stay_inline(
    pytester: pytest.Pytester, server: FakeOpenAI, data_dir: Path
) -> None:
    lines = (data_dir / "qa_data.json").read_text(encoding="utf-8").splitlines()[:6]
    broken = json.loads(lines[2])
    del broken["right_answer"]
    lines[2] = json.dumps(broken)
    own = pytester.mkdir("own")
    (own / "qa_data.json").write_text("\n".join(lines) + "\n", encoding="utf-8")

    for name, requests, inline_cases in (("first", 5, 0), ("again", 0, 5)):
        rec, summary, state = run(pytester, server, own, "[qa]", "6", name)
        assert server.stats()["received"] == requests
        assert state.inline_cases == inline_cases
        results = case_results(rec) if name == "again" else None
        reports = [r for r in rec.getreports("pytest_runtest_logreport") if r.when == "setup" and r.failed]
        assert len(reports) == 1 and "qa_data.json:3" in reports[0].longreprtext
        assert "right_answer" in reports[0].longreprtext
        assert summary["suites"][0]["cases"]["errors"] == 1
    assert results is not None and len(results) == 6
