"""Aggregates are identical whether cases run in one process or on two xdist workers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from . import judge_script as js
from .conftest import JudgeServer, write_suite
from .samples import CASE

METRICS = ["relevance", "faithfulness", "context_relevancy", "coherence", "factual_correctness", "factual_recall"]


def cases_and_script(n: int) -> tuple[list[dict[str, Any]], dict[tuple[str, str], Any]]:
    cases, script = [], {}
    for i in range(n):
        q = f"Question number {i}: how much do I get?"
        cases.append({**CASE, "id": f"c{i}", "question": q})
        script[("relevance", q)] = js.relevance(*(["yes"] * (i % 4 + 1) + ["no"] * (i % 3)))
        script[("faithfulness", q)] = js.faithfulness(*(["yes"] * (i % 5 + 1) + ["no"] * (i % 2)))
        script[("context_relevancy", q)] = js.context_relevancy(*(["yes", "idk", "no"][: i % 3 + 1]))
        script[("coherence", q)] = js.coherence(i % 5 + 1)
        script[("facts", q)] = js.facts(i % 4 + 1, i % 3, i % 2)
    # one unscorable case: its other metrics still count, its factual precision is an
    # error (0/0 key facts; an empty claim list now scores 1.0, issue 15)
    script[("facts", cases[3]["question"])] = js.facts(0, 0, 1)
    return cases, script


def summary(path: Path) -> dict[str, Any]:
    suite = json.loads(path.read_text(encoding="utf-8"))["suites"][0]
    return {"metrics": suite["metrics"], "cases": suite["cases"], "gates": suite["gates"], "tables": suite["tables"]}


def test_plain_and_two_workers_agree(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    cases, script = cases_and_script(12)
    judge_server.script(script)
    write_suite(pytester, cases, metrics=[{"name": m, "threshold": 0.5} for m in METRICS],
                thresholds={"faithfulness": {"mean": {"min": 0.5}}, "coherence": {"pass_rate": {"min": 0.4}},
                            "errors": {"max": 1}})
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-json", "plain.json",
                                          "--evals-cache-dir", "cache-plain")
    two = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--evals-json", "two.json",
                                        "--evals-cache-dir", "cache-two")
    assert plain.ret == two.ret == 0, plain.stdout.str()[-3000:]
    a, b = summary(pytester.path / "plain.json"), summary(pytester.path / "two.json")
    assert a == b
    assert a["cases"]["errors"] == 1 and a["cases"]["errors_by_kind"] == {"judge": 1}
    assert a["cases"]["total"] == 12
    assert [g["passed"] for g in a["gates"]] == [True, True, True]
    # case 3 errored on factual_correctness only: its relevance is scored and counts
    expected = sum((i % 4 + 1) / (i % 4 + 1 + i % 3) for i in range(12)) / 12
    assert a["metrics"]["relevance"]["mean"]["value"] == pytest.approx(expected)
    assert a["metrics"]["relevance"]["mean"]["n"] == 12
    assert a["metrics"]["factual_correctness"]["mean"]["n"] == 11
    assert a["metrics"]["faithfulness"]["mean"]["n"] == 12
    # both runs asked the judge everything (separate caches): 12 cases x 5 requests each, twice
    assert judge_server.server.stats()["received"] == 2 * 12 * 5


def test_scored_metrics_of_an_erroring_case_feed_the_aggregates(pytester: pytest.Pytester,
                                                               judge_server: JudgeServer) -> None:
    cases, script = cases_and_script(4)
    judge_server.script(script)
    write_suite(pytester, cases, metrics=METRICS)
    pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    m = summary(pytester.path / "s.json")["metrics"]
    assert m["relevance"]["mean"]["n"] == 4  # case c3 is an error, but its relevance was scored
    assert m["factual_correctness"]["errors"]["value"] == 1 and m["factual_correctness"]["mean"]["n"] == 3


def test_judge_block_majority_plain_and_two_workers(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    """``judge: {n_runs: 3, combine: majority}``: the pass rate counts cases most of whose
    runs pass, identically under -n 2; the mean is still the mean over every run."""
    runs = [["yes"], ["yes", "no"], ["no"]]  # relevance 1.0, 0.5, 0.0
    patterns = [(0, 0, 2), (0, 1, 1), (1, 1, 1), (0, 2, 2), (0, 0, 0), (2, 2, 0)]
    cases, script = [], {}
    for i, pattern in enumerate(patterns):
        q = f"Question {i}: can I pay by card?"
        cases.append({**CASE, "id": f"m{i}", "question": q})
        script[("relevance", q)] = [js.relevance(*runs[p]) for p in pattern]
    judge_server.script(script)
    write_suite(pytester, cases, metrics=[{"name": "relevance", "threshold": 0.5}],
                judge={"domain": "a card-payments help desk", "n_runs": 3, "combine": "majority"},
                thresholds={"relevance": {"pass_rate": {"min": 0.5}}})
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-json", "plain.json",
                                          "--evals-cache-dir", "cache-plain")
    judge_server.judge.calls.clear()  # the second run's judge answers the same three replies
    two = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--evals-json", "two.json",
                                        "--evals-cache-dir", "cache-two")
    a, b = summary(pytester.path / "plain.json"), summary(pytester.path / "two.json")
    assert a == b, plain.stdout.str()[-3000:]
    assert plain.ret == two.ret
    scores = [[(1.0, 0.5, 0.0)[p] for p in pattern] for pattern in patterns]
    majority = sum(1 for s in scores if sum(x >= 0.5 for x in s) * 2 > len(s))
    assert a["metrics"]["relevance"]["pass_rate"]["value"] == pytest.approx(majority / len(patterns))
    assert a["metrics"]["relevance"]["mean"]["value"] == pytest.approx(sum(sum(s) / 3 for s in scores) / len(scores))
    assert "run_std" in a["metrics"]["relevance"]
    assert judge_server.server.stats()["received"] == 2 * len(patterns) * 3
