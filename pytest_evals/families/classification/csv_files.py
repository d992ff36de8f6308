"""GOV.UK Chat-shaped CSV files in a run's suite folder.

Their tool writes ``results.csv`` (the case's fields plus the classification) and
``aggregate.csv`` (``property,value``) per run, and ``miscategorised_cases.csv`` for the
router. For the GOV.UK tasks the run folder's files take that shape: their columns
first, then ours (``evals_case_id``, ``evals_status``, ``evals_message``) so nothing of the core's files is lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_evals.model.case_result import CaseResult

#: Task -> (GOV.UK Chat property, our metric path) for aggregate.csv, in their order.
PROPERTIES: dict[str, tuple[tuple[str, str], ...]] = {
    "jailbreak_guardrails": (
        ("Precision", "precision"), ("Recall", "recall"), ("True positives", "tp"),
        ("True negatives", "tn"), ("False positives", "fp"), ("False negatives", "fn"),
    ),
    "output_guardrails": (
        ("Any-triggered Precision", "precision"), ("Any-triggered Recall", "recall"),
        ("Any-triggered True positives", "tp"), ("Any-triggered True negatives", "tn"),
        ("Any-triggered False positives", "fp"), ("Any-triggered False negatives", "fn"),
    ),
    "question_router": (
        ("Accuracy", "accuracy"), ("Precision", "weighted_precision"), ("Recall", "weighted_recall"),
        ("F1 Score", "weighted_f1"), ("F2 Score", "weighted_f2"),
    ),
    "retrieval": tuple(
        (f"{label} {stat}", f"{name}.{key}")
        for name, label in (("precision", "Precision"), ("recall", "Recall"), ("f1", "F1"), ("f2", "F2"))
        for stat, key in (("mean", "mean"), ("median", "median"), ("max", "max"), ("standard deviation", "std"))
    ),
    "topic_tagger": (
        ("Errored", "errored"),
        ("Correct Primary and Secondary", "correct_primary_and_secondary.count"),
        ("Correct Topics (any order)", "correct_topics_any_order.count"),
        ("Matched True primary with primary", "primary_matched_with_primary.count"),
        ("Matched True primary with either topic", "primary_matched_with_either.count"),
        ("Matched Any Topic", "matched_any_topic.count"),
    ),
}

#: Prefixed: their rows have a ``message`` field of their own (output_guardrails).
_OUR_COLUMNS = ("evals_case_id", "evals_status", "evals_message")


def _leaf(tree: Mapping[str, Any], path: str) -> Any:
    node: Any = tree
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    if not isinstance(node, Mapping):
        return None
    value = node.get("value")
    # Counts are stored as floats in the metric tree; their file says 4, not 4.0.
    return int(value) if node.get("kind") == "count" and value is not None else value


def aggregate_rows(task: str, suite: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``property,value`` rows: GOV.UK Chat's properties first, then every metric of ours."""
    from pytest_evals.reports.result_files import aggregate_rows as core_rows

    metrics = suite.get("metrics") or {}
    tables = suite.get("tables") or {}
    rows: list[dict[str, Any]] = []
    if task != "retrieval":
        rows.append({"property": "Model", "value": tables.get("model")})
    evaluated = _leaf(metrics, "evaluated")
    if evaluated is None:
        evaluated = (suite.get("cases") or {}).get("total")
    rows.append({"property": "Evaluated", "value": int(evaluated) if evaluated is not None else None})
    for label, path in PROPERTIES.get(task, ()):
        rows.append({"property": label, "value": _leaf(metrics, path)})
    if task == "question_router":
        rows.append({"property": "Miscategorised Cases", "value": len(tables.get("miscategorised_cases") or [])})
    for row in core_rows(suite):
        rows.append({"property": row["metric"], **row})
    return rows


def result_rows(results: Sequence[CaseResult]) -> tuple[list[str], list[dict[str, Any]]]:
    ordered = sorted(results, key=lambda r: (r.index, r.case_id))
    header: dict[str, None] = {}
    rows = []
    for r in ordered:
        row = dict(r.data.get("row") or {})
        row.update({"evals_case_id": r.case_id, "evals_status": r.status, "evals_message": r.message})
        for key in row:
            header.setdefault(key, None)
        rows.append(row)
    cols = [k for k in header if k not in _OUR_COLUMNS] + list(_OUR_COLUMNS)
    return cols, rows


def write_govuk_csvs(folder: Path, suite: Mapping[str, Any], results: Sequence[CaseResult]) -> dict[str, str]:
    """Rewrite results.csv/aggregate.csv of a GOV.UK task's suite folder in their shape."""
    from pytest_evals.output.artifacts import atomic_write
    from pytest_evals.reports.result_files import csv_text

    task = str(suite.get("task") or "")
    if task not in PROPERTIES:
        return {}
    written: dict[str, str] = {}
    cols, rows = result_rows(results)
    atomic_write(folder / "results.csv", csv_text(cols, rows))
    agg = aggregate_rows(task, suite)
    agg_cols = ["property", "value", "kind", "ci_low", "ci_high", "n", "reason", "gate", "gate_passed"]
    atomic_write(folder / "aggregate.csv", csv_text(agg_cols, agg))
    missed = (suite.get("tables") or {}).get("miscategorised_cases")
    if task == "question_router" and missed:
        mis_cols = list(dict.fromkeys(k for row in missed for k in row))
        atomic_write(folder / "miscategorised_cases.csv", csv_text(mis_cols, missed))
        written["miscategorised_cases_csv"] = f"{folder.name}/miscategorised_cases.csv"
    return written
