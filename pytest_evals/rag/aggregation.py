"""The suite's metric tree: per metric mean (95% CI), median, std, pass rate, errors.

Results arrive in any order (xdist); they are sorted by case position first so every
sum is taken in the same order and plain and ``-n 2`` runs agree to the last digit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_evals.aggregate import MetricTree, count, mean_metric, proportion, score_summary
from pytest_evals.rag.config import RagMetricSpec
from pytest_evals.results import CaseResult

#: How many lowest-scoring cases per metric the summary lists for reviewers.
LOWEST = 5


def _metric_data(result: CaseResult, name: str) -> dict[str, Any] | None:
    metrics = result.data.get("metrics")
    if not isinstance(metrics, dict):
        return None
    entry = metrics.get(name)
    return entry if isinstance(entry, dict) else None


def aggregate_results(
    specs: Sequence[RagMetricSpec], n_runs: int, results: Sequence[CaseResult]
) -> tuple[MetricTree, dict[str, Any]]:
    ordered = sorted(results, key=lambda r: (r.index, r.case_id))
    tree: MetricTree = {}
    lowest: dict[str, list[dict[str, Any]]] = {}
    for spec in specs:
        values: list[float] = []
        run_stds: list[float] = []
        errors = 0
        scored: list[tuple[float, int, str]] = []
        for r in ordered:
            entry = _metric_data(r, spec.name)
            if entry is None:
                continue
            score = entry.get("score")
            if score is None:
                errors += 1 if entry.get("error") else 0
                continue
            values.append(float(score))
            scored.append((float(score), r.index, r.case_id))
            if entry.get("std") is not None:
                run_stds.append(float(entry["std"]))
        # Every RAG metric scores in [0, 1]: its mean's interval stays inside.
        sub = score_summary(values, spec.effective_threshold, bounds=(0.0, 1.0))
        sub["errors"] = count(errors)
        if n_runs > 1:
            # Mean within-case spread over runs: how much the judge disagrees with itself.
            sub["run_std"] = mean_metric(run_stds, empty="no case was scored over several runs")
        tree[spec.name] = sub
        lowest[spec.name] = [{"case_id": c, "score": s} for s, _i, c in sorted(scored)[:LOWEST]]
    complete = [r for r in ordered if all((_metric_data(r, s.name) or {}).get("score") is not None for s in specs)]
    all_passed = sum(1 for r in complete if all((_metric_data(r, s.name) or {}).get("passed") for s in specs))
    tree["all_metrics_pass_rate"] = proportion(all_passed, len(complete), "no case had every metric scored")
    judges = sorted({str(r.data["judge"]) for r in ordered if r.data.get("judge")})
    tables: dict[str, Any] = {"judge": ", ".join(judges), "lowest_scores": lowest}
    return tree, tables
