"""A suite's aggregates: pass rate, the weighted score, each assertion, custom metrics.

- ``pass_rate``: cases that passed among the scored ones (Clopper-Pearson interval);
- ``score``: the cases' weighted scores in [0, 1] (``mean``, ``median``, ``std``);
- ``per_assertion.<name>``: ``pass_rate`` of the cases it was applied to and ``mean`` of
  its value in its own units (BLEU, a 1-5 rating, a length), with the bounded-mean
  interval when the value has a range and Student's t otherwise;
- ``<custom metric>``: a named judged metric at the top level, as the built-in tasks'
  metrics are (``mean``, ``median``, ``std``, ``pass_rate``).

Every one is gate-able under ``thresholds:`` and usable with ``max_drop``: the paired
rules read the same per-case data (:func:`paired_contribution`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.metric_value import MetricTree, mean_metric, proportion, score_summary

SCORED = ("passed", "failed")


def case_assertions(data: Mapping[str, Any]) -> Mapping[str, Any]:
    found = data.get("assertions")
    return found if isinstance(found, Mapping) else {}


def _value(entry: Mapping[str, Any]) -> float | None:
    value = entry.get("value")
    if value is None:
        value = entry.get("score")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value)


def _bounds(entry: Mapping[str, Any]) -> tuple[float, float] | None:
    b = entry.get("bounds")
    if isinstance(b, list) and len(b) == 2 and all(isinstance(x, (int, float)) for x in b):
        return float(b[0]), float(b[1])
    return None


def aggregate(results: list[CaseResult]) -> MetricTree:
    scored = [r for r in results if r.status in SCORED]
    tree: MetricTree = {
        "pass_rate": proportion(sum(r.status == "passed" for r in scored), len(scored), "no scored cases"),
    }
    case_scores = [float(s) for r in scored if isinstance(s := r.data.get("score"), (int, float))]
    tree["score"] = score_summary(case_scores, bounds=(0.0, 1.0))
    per: dict[str, dict[str, Any]] = {}
    for r in scored:
        for name, entry in case_assertions(r.data).items():
            slot = per.setdefault(name, {"passed": 0, "n": 0, "values": [], "bounds": _bounds(entry),
                                         "custom": bool(entry.get("custom")), "threshold": entry.get("threshold")})
            slot["n"] += 1
            slot["passed"] += bool(entry.get("passed"))
            value = _value(entry)
            if value is not None:
                slot["values"].append(value)
    per_tree: MetricTree = {}
    for name, slot in per.items():
        per_tree[name] = {
            "pass_rate": proportion(slot["passed"], slot["n"], "not applied to any scored case"),
            "mean": mean_metric(slot["values"], bounds=slot["bounds"]),
        }
        if slot["custom"]:
            summary = score_summary(slot["values"], bounds=slot["bounds"])
            summary["pass_rate"] = per_tree[name]["pass_rate"]  # type: ignore[index]
            tree[name] = summary
    tree["per_assertion"] = per_tree
    return tree


def paired_contribution(
    data: Mapping[str, Any], scores: Mapping[str, Any], status: str, metric: str
) -> tuple[float, float] | Any | None:
    """One case's (num, den) of ``per_assertion.<name>.pass_rate|mean`` and of a custom
    metric's ``pass_rate``; everything else is left to the built-in rules
    (``pass_rate``, ``score.mean``, ``<custom>.mean`` read ``status`` and ``scores``)."""
    parts = metric.split(".")
    if len(parts) == 3 and parts[0] == "per_assertion":
        name, stat = parts[1], parts[2]
    elif len(parts) == 2 and parts[1] == "pass_rate" and parts[0] not in ("score", "per_assertion"):
        name, stat = parts[0], "pass_rate"
    else:
        return NotImplemented
    if stat not in ("pass_rate", "mean"):
        return NotImplemented
    if status not in SCORED:
        return None
    entry = case_assertions(data).get(name)
    if not isinstance(entry, Mapping):
        return None
    if stat == "pass_rate":
        return float(bool(entry.get("passed"))), 1.0
    value = _value(entry)
    return None if value is None else (value, 1.0)
