from __future__ import annotations

import random
import statistics

import pytest

from pytest_evals.families.rag.aggregation import aggregate_results
from pytest_evals.families.rag.config import RagMetricSpec
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.metric_value import Metric

SPECS = [RagMetricSpec(name="faithfulness", threshold=1.0), RagMetricSpec(name="relevance", threshold=0.5)]


def result(index: int, faith: float | None, rel: float | None, *, error: str | None = None,
           std: float | None = None) -> CaseResult:
    def entry(score: float | None, threshold: float) -> dict:
        return {"score": score, "std": std, "runs": [] if score is None else [score], "threshold": threshold,
                "passed": None if score is None else score >= threshold,
                "error": error if score is None else None}

    r = CaseResult(suite="s", task="rag_answers", case_id=f"c{index}", source=f"f:{index}", index=index)
    r.data = {"judge": "llm", "metrics": {"faithfulness": entry(faith, 1.0), "relevance": entry(rel, 0.5)}}
    return r


def value(m: object) -> float | None:
    assert isinstance(m, Metric)
    return m.value


def test_per_metric_summary() -> None:
    results = [result(0, 1.0, 0.25), result(1, 0.5, 1.0), result(2, 1.0, 0.5), result(3, 0.75, 0.75),
               result(4, None, 1.0, error="judge")]
    tree, tables = aggregate_results(SPECS, 1, results)
    f = tree["faithfulness"]
    assert isinstance(f, dict)
    assert value(f["mean"]) == pytest.approx(0.8125)
    assert value(f["median"]) == pytest.approx(0.875)
    assert value(f["std"]) == pytest.approx(statistics.stdev([1.0, 0.5, 1.0, 0.75]))
    assert value(f["pass_rate"]) == 0.5
    assert value(f["errors"]) == 1
    ci = f["mean"].ci  # type: ignore[union-attr]
    assert ci is not None and ci[0] < 0.8125 < ci[1]
    r = tree["relevance"]
    assert isinstance(r, dict)
    assert value(r["mean"]) == pytest.approx(0.7) and value(r["pass_rate"]) == 0.8 and value(r["errors"]) == 0
    assert "run_std" not in r
    # a case passes overall when every metric passes; unscored cases are left out
    assert value(tree["all_metrics_pass_rate"]) == pytest.approx(1 / 4)
    assert tables["judge"] == "llm"
    assert tables["lowest_scores"]["faithfulness"][0] == {"case_id": "c1", "score": 0.5}


def test_order_of_arrival_does_not_change_a_digit() -> None:
    rng = random.Random(7)
    results = [result(i, rng.random(), rng.random(), std=rng.random()) for i in range(40)]
    expected, _ = aggregate_results(SPECS, 3, results)
    for _ in range(5):
        shuffled = results[:]
        rng.shuffle(shuffled)
        got, _ = aggregate_results(SPECS, 3, shuffled)
        assert got == expected


def test_run_std_with_several_runs() -> None:
    tree, _ = aggregate_results(SPECS, 3, [result(0, 1.0, 1.0, std=0.1), result(1, 1.0, 1.0, std=0.3)])
    f = tree["faithfulness"]
    assert isinstance(f, dict)
    assert value(f["run_std"]) == pytest.approx(0.2)


def test_nothing_scored_is_undefined_not_zero() -> None:
    tree, _ = aggregate_results(SPECS, 1, [result(0, None, None, error="judge")])
    f = tree["faithfulness"]
    assert isinstance(f, dict)
    assert value(f["mean"]) is None and f["mean"].reason.startswith("0/0")  # type: ignore[union-attr]
    assert value(f["errors"]) == 1
    assert value(tree["all_metrics_pass_rate"]) is None


def test_results_without_rag_data_are_skipped() -> None:
    bare = CaseResult(suite="s", task="rag_answers", case_id="x", source="f:9", status="error")
    tree, _ = aggregate_results(SPECS, 1, [bare, result(1, 1.0, 1.0)])
    f = tree["faithfulness"]
    assert isinstance(f, dict) and value(f["mean"]) == 1.0 and value(f["errors"]) == 0
