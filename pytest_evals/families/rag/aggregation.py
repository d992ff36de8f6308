"""The suite's metric tree: per metric mean (95% CI), median, std, pass rate, errors.

Results arrive in any order (xdist); they are sorted by case position first so every
sum is taken in the same order and plain and ``-n 2`` runs agree to the last digit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_evals.families.rag.config import RagMetricSpec
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.metric_value import (
    MetricTree,
    count,
    mean_metric,
    proportion,
    score_summary,
)

#: How many lowest-scoring cases per metric the summary lists for reviewers.
LOWEST = 5


def _metric_data(result: CaseResult, name: str) -> dict[str, Any] | None:
    metrics = result.data.get("metrics")
    if not isinstance(metrics, dict):
        return None
    entry = metrics.get(name)
    return entry if isinstance(entry, dict) else None


def aggregate_results(
    specs: Sequence[RagMetricSpec], n_runs: int | Mapping[str, int], results: Sequence[CaseResult]
) -> tuple[MetricTree, dict[str, Any]]:
    """``n_runs``: the suite's, or per metric (a metric's ``judge.n_runs``)."""
    ordered = sorted(results, key=lambda r: (r.index, r.case_id))
    tree: MetricTree = {}
    lowest: dict[str, list[dict[str, Any]]] = {}
    for spec in specs:
        values: list[float] = []
        run_stds: list[float] = []
        errors = 0
        failed_runs = 0
        scored: list[tuple[float, int, str]] = []
        majority = False
        for r in ordered:
            entry = _metric_data(r, spec.name)
            if entry is None:
                continue
            score = entry.get("score")
            failed_runs += int(entry.get("failed_runs") or 0)
            if score is None:
                errors += 1 if entry.get("error") else 0
                continue
            values.append(float(score))
            scored.append((float(score), r.index, r.case_id))
            if entry.get("std") is not None:
                run_stds.append(float(entry["std"]))
            majority = majority or entry.get("combine") == "majority"
        # Every RAG metric scores in [0, 1]: its mean's interval stays inside.
        sub = score_summary(values, None if spec.lower_is_better else spec.effective_threshold, bounds=(0.0, 1.0))
        if spec.lower_is_better:
            # bias: a case passes at or below its threshold.
            ok = sum(1 for v in values if v <= spec.effective_threshold + 1e-9)
            sub["pass_rate"] = proportion(ok, len(values), "no scored cases")
        if majority:
            # judge.combine: majority: a case passes when most of its runs did.
            ok = sum(1 for r in ordered if (_metric_data(r, spec.name) or {}).get("passed"))
            sub["pass_rate"] = proportion(ok, len(values), "no scored cases")
        sub["errors"] = count(errors)
        sub["failed_runs"] = count(failed_runs)
        if (n_runs if isinstance(n_runs, int) else n_runs.get(spec.name, 1)) > 1:
            # Mean within-case spread over runs: how much the judge disagrees with itself.
            # The std of [0, 1] scores is at most sqrt(k / (k - 1)) / 2 <= 0.71: bounded too.
            sub["run_std"] = mean_metric(run_stds, empty="no case was scored over several runs", bounds=(0.0, 1.0))
        tree[spec.name] = sub
        worst_first = sorted(scored, key=lambda t: (-t[0], t[1]) if spec.lower_is_better else (t[0], t[1]))
        lowest[spec.name] = [{"case_id": c, "score": s} for s, _i, c in worst_first[:LOWEST]]
    complete = [r for r in ordered if all((_metric_data(r, s.name) or {}).get("score") is not None for s in specs)]
    all_passed = sum(1 for r in complete if all((_metric_data(r, s.name) or {}).get("passed") for s in specs))
    tree["all_metrics_pass_rate"] = proportion(all_passed, len(complete), "no case had every metric scored")
    judges = sorted({str(r.data["judge"]) for r in ordered if r.data.get("judge")})
    tables: dict[str, Any] = {"judge": ", ".join(judges), "lowest_scores": lowest}
    models: dict[str, list[str]] = {}
    for r in ordered:
        for metric, model in (r.data.get("judge_models") or {}).items():
            if model not in models.setdefault(metric, []):
                models[metric].append(str(model))
    classes: dict[str, str] = {}
    for r in ordered:
        for metric, path in (r.data.get("deepeval_classes") or {}).items():
            classes.setdefault(metric, str(path))
    if classes:
        tables["deepeval_classes"] = classes
    if models:
        # Every judge model used, per metric (a metric's own ``model`` overrides the session's).
        tables["judge_models"] = {m: ", ".join(sorted(v)) for m, v in models.items()}
        by_model: dict[str, list[str]] = {}
        for metric, used in tables["judge_models"].items():
            by_model.setdefault(used, []).append(metric)
        # One line for the terminal: the session header names only the session's model.
        tables["judge_note"] = "judged by " + "; ".join(f"{m} ({', '.join(ms)})" for m, ms in by_model.items())
    return tree, tables
