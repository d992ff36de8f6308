"""RAG metrics through batch mode: each answer a case still needs is one more round."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from rag import judge_script as js
from rag.judge_script import ScriptedJudge
from rag.samples import CASE

from pytest_evals.testing.fake_openai import FakeOpenAI

METRICS = ["relevance", "faithfulness", "context_relevancy", "coherence", "factual_correctness", "factual_recall"]
CASE_B: dict[str, Any] = {**CASE, "id": "second", "question": "When is Winter Fuel Payment paid?"}


@pytest.fixture
def rag_server() -> Iterator[tuple[FakeOpenAI, ScriptedJudge]]:
    judge = ScriptedJudge(target_reply="You'll get £300 if you live alone.")
    with FakeOpenAI(responder=judge) as server:
        yield server, judge


def write_rag(pytester: pytest.Pytester, **fields: Any) -> None:
    raw = {"task": "rag_answers", "input_path": "rag.jsonl", "metrics": METRICS, **fields}
    (pytester.path / "rag.jsonl").write_text("".join(json.dumps(c) + "\n" for c in (CASE, CASE_B)), encoding="utf-8")
    (pytester.path / "rag.eval.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")


def run_rag(pytester: pytest.Pytester, server: FakeOpenAI, name: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / f"{name}.json"
    # In process unless the run has xdist workers: a process start costs more than the run.
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    result = runner(
        "rag.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", server.base_url,
        "--evals-cache-dir", str(pytester.path / f"cache-{name}"), "--evals-json", str(out),
        "--evals-batch-poll", "0.02", *args,
    )
    assert out.is_file(), result.stdout.str()[-3000:]
    return result, json.loads(out.read_text(encoding="utf-8"))


def scores(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary["suites"][0]["metrics"].items() if k in METRICS}


def test_judge_metrics_of_saved_answers_take_one_round(
    pytester: pytest.Pytester, rag_server: tuple[FakeOpenAI, ScriptedJudge]
) -> None:
    server, _judge = rag_server
    write_rag(pytester)
    _, live = run_rag(pytester, server, "live")
    asked_live = server.stats()["received"]
    assert asked_live == 10  # five prompts per case (the two factual metrics share one)
    server.reset()
    _, batched = run_rag(pytester, server, "batch", "--evals-batch")
    stats = server.stats()
    # Every metric's request is found in one gathering pass: the metrics run side by side.
    assert (stats["batches_created"], stats["batch_lines"], stats["received"]) == (1, 10, 0)
    assert batched["batch"]["rounds"] == 1
    assert set(scores(live)) == set(METRICS)
    assert scores(batched) == scores(live)


def test_generation_then_judging_take_two_rounds(
    pytester: pytest.Pytester, rag_server: tuple[FakeOpenAI, ScriptedJudge]
) -> None:
    server, judge = rag_server
    write_rag(pytester, generate=True, target={"model": "answer-model"}, metrics=["relevance", "coherence"])
    result, summary = run_rag(pytester, server, "gen", "--evals-batch", "--evals-model", "judge-model")
    stats = server.stats()
    # round 1: the two answers; round 2: two metrics x two cases on those answers
    assert (stats["batches_created"], stats["batch_lines"], stats["received"]) == (2, 6, 0)
    assert summary["batch"]["rounds"] == 2
    assert summary["suites"][0]["cases"]["errors"] == 0
    result.stdout.fnmatch_lines(["*round 1: 2 uncached requests*", "*round 2: 4 uncached requests*", "*2 rounds*"])
    answers = [r for r in judge.requests if r["model"] == "answer-model"]
    assert len(answers) == 2


def test_a_judge_re_ask_is_one_more_round(
    pytester: pytest.Pytester, rag_server: tuple[FakeOpenAI, ScriptedJudge]
) -> None:
    server, judge = rag_server
    judge.script = {("coherence", CASE["question"]): ["Quite coherent, a four I would say.", js.coherence(4)]}
    write_rag(pytester, metrics=["relevance", "coherence"])
    _, summary = run_rag(pytester, server, "reask", "--evals-batch")
    stats = server.stats()
    # round 1: four requests; the unreadable coherence reply is re-asked in round 2
    assert (stats["batches_created"], stats["batch_lines"], stats["received"]) == (2, 5, 0)
    assert summary["batch"]["rounds"] == 2
    suite = summary["suites"][0]
    assert suite["cases"]["errors"] == 0
    assert suite["metrics"]["coherence"]["mean"]["value"] == pytest.approx((0.75 + 1.0) / 2)


def test_same_rounds_and_scores_on_two_workers(
    pytester: pytest.Pytester, rag_server: tuple[FakeOpenAI, ScriptedJudge], tmp_path: Path
) -> None:
    server, _judge = rag_server
    write_rag(pytester, generate=True, target={"model": "answer-model"}, metrics=["relevance", "coherence"])
    _, plain = run_rag(pytester, server, "plain", "--evals-batch")
    server.reset()
    _, two = run_rag(pytester, server, "two", "--evals-batch", "-n", "2")
    stats = server.stats()
    assert (stats["batches_created"], stats["batch_lines"], stats["received"]) == (2, 6, 0)
    assert two["batch"]["rounds"] == plain["batch"]["rounds"] == 2
    assert scores(two) == scores(plain)
