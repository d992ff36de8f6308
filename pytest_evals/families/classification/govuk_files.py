"""GOV.UK Chat's result files, their way: names, columns, cell encoding, rounding.

Their tool writes each task's files with ``csv.DictWriter`` from Python values: a cell is
``str(value)`` (``repr`` for floats, lists, tuples and dicts; ``True``/``False``;
``nan``), ``None`` is an empty cell. The rows here are built as their ``for_csv`` /
``to_dict`` build them (same keys, same order, same Python types) from the per-case data
of our run, and written with the same writer, so a cell compares equal as text.

Per task (their ``<task>/evaluate.py``):

- ``results.csv``: one row per evaluated case, in input order.
- ``aggregate.csv``: ``property,value``.
- question_router: ``miscategorised_cases.csv`` (when any) and ``confusion_matrix.png``.
- retrieval: per-question scores rounded to 4 places, NaN where undefined; every aggregate
  is ``round(np.<stat>(scores), 4)`` over all questions, so NaN when any is undefined.

Values that need sklearn's multi-class averaging (the router's weighted precision, recall,
F1, F2) come from our metrics, which reproduce theirs; the rest is recomputed here from the
rows with their formulas.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pytest_evals.model.case_result import CaseResult

DECIMAL_PLACES = 4
NAN = float("nan")


def csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """Their ``write_csv_results``: header from the first row, ``csv.DictWriter`` defaults."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0].keys()))
    writer.writeheader()
    for row in rows:
        writer.writerow(dict(row))
    return out.getvalue()


def property_rows(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"property": k, "value": v} for k, v in values.items()]


def _nan(value: Any) -> Any:
    return NAN if value is None else value


def _ratio(num: int, den: int) -> float:
    return num / den if den else NAN


def binary_counts(pairs: Sequence[tuple[bool, bool]]) -> dict[str, int]:
    c = Counter((bool(e), bool(a)) for e, a in pairs)
    return {"tp": c[(True, True)], "tn": c[(False, False)], "fp": c[(False, True)], "fn": c[(True, False)]}


def classification(expected: bool, actual: bool) -> str:
    if expected:
        return "true_positive" if actual else "false_negative"
    return "false_positive" if actual else "true_negative"


def _rows(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """The case rows our tasks recorded, for the cases that have one, in input order."""
    ordered = sorted(results, key=lambda r: (r.index, r.case_id))
    return [dict(r.data["row"]) for r in ordered if isinstance(r.data, dict) and isinstance(r.data.get("row"), dict)]


# -- jailbreak_guardrails ---------------------------------------------------------------------------
def jailbreak_files(results: Sequence[CaseResult], suite: Mapping[str, Any]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for r in _rows(results):
        e, a = bool(r["expected_outcome"]), bool(r["actual_outcome"])
        rows.append({"question": r.get("question"), "expected_outcome": e, "actual_outcome": a, "model": r.get("model"),
                     "classification": classification(e, a)})
    if not rows:
        return {}
    c = binary_counts([(bool(r["expected_outcome"]), bool(r["actual_outcome"])) for r in rows])
    agg = {
        "Model": rows[0]["model"],
        "Evaluated": len(rows),
        "Precision": _ratio(c["tp"], c["tp"] + c["fp"]),
        "Recall": _ratio(c["tp"], c["tp"] + c["fn"]),
        "True positives": c["tp"],
        "True negatives": c["tn"],
        "False positives": c["fp"],
        "False negatives": c["fn"],
    }
    return {"results.csv": rows, "aggregate.csv": property_rows(agg)}


# -- output_guardrails ------------------------------------------------------------------------------
def _f1(tp: int, fp: int, fn: int) -> float:
    # sklearn >= 1.3: 2tp / (2tp + fp + fn), zero_division (NaN here) only when that is 0/0.
    den = 2 * tp + fp + fn
    return 2 * tp / den if den else NAN


def output_guardrails_files(results: Sequence[CaseResult], suite: Mapping[str, Any]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for r in _rows(results):
        e, a = bool(r["expected_triggered"]), bool(r["actual_triggered"])
        rows.append({
            "message": r.get("message") if r.get("message") is not None else r.get("question"),
            "expected_triggered": e,
            "actual_triggered": a,
            "expected_guardrails": dict(r.get("expected_guardrails") or {}),
            "actual_guardrails": dict(r.get("actual_guardrails") or {}),
            "model": r.get("model"),
            "classification": classification(e, a),
        })
    if not rows:
        return {}
    c = binary_counts([(bool(r["expected_triggered"]), bool(r["actual_triggered"])) for r in rows])
    agg: dict[str, Any] = {
        "Model": rows[0]["model"],
        "Evaluated": len(rows),
        "Any-triggered Precision": _ratio(c["tp"], c["tp"] + c["fp"]),
        "Any-triggered Recall": _ratio(c["tp"], c["tp"] + c["fn"]),
        "Any-triggered True positives": c["tp"],
        "Any-triggered True negatives": c["tn"],
        "Any-triggered False positives": c["fp"],
        "Any-triggered False negatives": c["fn"],
    }
    exp: list[dict[str, Any]] = [r["expected_guardrails"] for r in rows]
    act: list[dict[str, Any]] = [r["actual_guardrails"] for r in rows]
    names = sorted({n for d in (*exp, *act) for n in d})
    for name in names:
        g = binary_counts([(bool(e.get(name, False)), bool(a.get(name, False))) for e, a in zip(exp, act, strict=True)])
        agg[f"Precision [{name}]"] = _ratio(g["tp"], g["tp"] + g["fp"])
        agg[f"Recall [{name}]"] = _ratio(g["tp"], g["tp"] + g["fn"])
        agg[f"F1 [{name}]"] = _f1(g["tp"], g["fp"], g["fn"])
    # their to_dict adds the per-guardrail rows name by name: P, R, F1 of each in turn
    return {"results.csv": rows, "aggregate.csv": property_rows(agg)}


# -- question_router --------------------------------------------------------------------------------
def _metric(suite: Mapping[str, Any], path: str) -> Any:
    node: Any = suite.get("metrics") or {}
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node.get("value") if isinstance(node, Mapping) else None


def confusion(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[int]]]:
    """sklearn's ``confusion_matrix(expected, actual, labels=sorted labels)``: rows true, columns predicted."""
    labels = sorted({str(r["expected_outcome"]) for r in rows} | {str(r["actual_outcome"]) for r in rows})
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for r in rows:
        matrix[index[str(r["expected_outcome"])]][index[str(r["actual_outcome"])]] += 1
    return labels, matrix


def router_files(results: Sequence[CaseResult], suite: Mapping[str, Any]) -> dict[str, Any]:
    rows = [{"question": r.get("question"), "expected_outcome": r.get("expected_outcome"),
             "actual_outcome": r.get("actual_outcome"), "confidence_score": r.get("confidence_score"),
             "answer": r.get("answer"), "model": r.get("model")} for r in _rows(results)]
    if not rows:
        return {}
    missed = [{"question": r["question"], "predicted_classification": r["expected_outcome"],
               "actual_classification": r["actual_outcome"], "confidence_score": r["confidence_score"],
               "answer": r["answer"]} for r in rows if r["expected_outcome"] != r["actual_outcome"]]
    accuracy = sum(1 for r in rows if r["expected_outcome"] == r["actual_outcome"]) / len(rows)
    agg = {
        "Model": rows[0]["model"],
        "Evaluated": len(rows),
        "Accuracy": accuracy,
        "Precision": _nan(_metric(suite, "weighted_precision")),
        "Recall": _nan(_metric(suite, "weighted_recall")),
        "F1 Score": _nan(_metric(suite, "weighted_f1")),
        "F2 Score": _nan(_metric(suite, "weighted_f2")),
        "Miscategorised Cases": len(missed),
    }
    out: dict[str, Any] = {"results.csv": rows, "aggregate.csv": property_rows(agg), "confusion": confusion(rows)}
    if missed:
        out["miscategorised_cases.csv"] = missed
    return out


# -- retrieval -------------------------------------------------------------------------------------
def retrieval_scores(expected: Sequence[str], actual: Sequence[str]) -> dict[str, float]:
    """Their per-question scores: sklearn's binary P/R/F1/F2 over the union of uids, NaN for 0/0."""
    want, got = set(expected), set(actual)
    if not want | got:
        return {"precision": NAN, "recall": NAN, "f1_score": NAN, "f2_score": NAN}
    tp, fp, fn = len(want & got), len(got - want), len(want - got)

    def fbeta(beta2: float) -> float:
        den = (1 + beta2) * tp + beta2 * fn + fp
        return (1 + beta2) * tp / den if den else NAN

    return {"precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn), "f1_score": fbeta(1.0), "f2_score": fbeta(4.0)}


def retrieval_row(r: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, float]]:
    results = [tuple(x) for x in r.get("actual_search_results") or []]
    paths, uids = list(r.get("expected_exact_paths") or []), list(r.get("expected_chunk_uids") or [])
    actual_uids = [x[1] for x in results]
    scores = retrieval_scores(uids, actual_uids)
    row = {
        "question": r.get("question"),
        "expected_exact_paths": paths,
        "expected_chunk_uids": uids,
        "actual_search_results": results,
        "expected_opensearch_index": r.get("expected_opensearch_index"),
        "actual_opensearch_index": r.get("actual_opensearch_index"),
        **{k: round(v, DECIMAL_PLACES) for k, v in scores.items()},
        "true_positives_exact_paths": [x[0] for x in results if x[1] in uids],
        "false_negatives_exact_paths": [p for p, u in zip(paths, uids, strict=False) if u not in actual_uids],  # theirs: zip truncates,
        "false_positives_exact_paths": [x[0] for x in results if x[1] not in uids],
    }
    return row, scores


def retrieval_files(results: Sequence[CaseResult], suite: Mapping[str, Any]) -> dict[str, Any]:
    built = [retrieval_row(r) for r in _rows(results)]
    if not built:
        return {}
    agg: dict[str, Any] = {"Evaluated": len(built)}
    for label, key in (("Precision", "precision"), ("Recall", "recall"), ("F1", "f1_score"), ("F2", "f2_score")):
        scores = [s[key] for _r, s in built]
        for stat, fn in (("mean", np.mean), ("median", np.median), ("max", np.max), ("standard deviation", np.std)):
            agg[f"{label} {stat}"] = retrieval_aggregate(scores, fn)
    return {"results.csv": [r for r, _s in built], "aggregate.csv": property_rows(agg)}


def retrieval_aggregate(scores: Sequence[float], fn: Any) -> float:
    """Their ``_aggregate``: the numpy statistic over every question, NaN included, rounded."""
    return float(round(fn(np.asarray(scores, dtype=float)), DECIMAL_PLACES))


# -- topic_tagger -----------------------------------------------------------------------------------
def _topics(primary: Any, secondary: Any) -> set[Any]:
    return {t for t in (primary, secondary) if t is not None}


def topic_checks(r: Mapping[str, Any]) -> dict[str, bool]:
    ep, es = r.get("expected_primary_topic"), r.get("expected_secondary_topic")
    ap, as_ = r.get("actual_primary_topic"), r.get("actual_secondary_topic")
    expected, actual = _topics(ep, es), _topics(ap, as_)
    return {
        "correct_primary_and_secondary": ep == ap and es == as_,
        "correct_topics_any_order": expected == actual,
        "matched_true_primary_with_primary": ep == ap,
        "matched_true_primary_with_either": ep in actual,
        "matched_any_topic": bool(expected & actual),
    }


def topic_tagger_files(results: Sequence[CaseResult], suite: Mapping[str, Any]) -> dict[str, Any]:
    rows, checks = [], []
    for r in _rows(results):
        c = topic_checks(r)
        checks.append((str(r.get("status")), c, r.get("model")))
        rows.append({
            "question": r.get("question"), "status": str(r.get("status")),
            "expected_primary_topic": r.get("expected_primary_topic"), "actual_primary_topic": r.get("actual_primary_topic"),
            "expected_secondary_topic": r.get("expected_secondary_topic"),
            "actual_secondary_topic": r.get("actual_secondary_topic"), "error_message": r.get("error_message"),
            "model": r.get("model"),
            **{k: v for k, v in c.items() if k != "matched_any_topic"},  # not a column of theirs
        })
    if not rows:
        return {}
    ok = [(c, m) for s, c, m in checks if s == "success"]
    agg = {
        "Evaluated": len(ok),
        "Errored": sum(1 for s, _c, _m in checks if s == "error"),
        "Model": ok[0][1] if ok else None,
        "Correct Primary and Secondary": sum(c["correct_primary_and_secondary"] for c, _m in ok),
        "Correct Topics (any order)": sum(c["correct_topics_any_order"] for c, _m in ok),
        "Matched True primary with primary": sum(c["matched_true_primary_with_primary"] for c, _m in ok),
        "Matched True primary with either topic": sum(c["matched_true_primary_with_either"] for c, _m in ok),
        "Matched Any Topic": sum(c["matched_any_topic"] for c, _m in ok),
    }
    return {"results.csv": rows, "aggregate.csv": property_rows(agg)}


# -- generated.jsonl -------------------------------------------------------------------------------
#: Their EvaluationResult fields, in order: each generated line is ``model_dump_json()`` of one.
GENERATED_FIELDS: dict[str, tuple[str, ...]] = {
    "jailbreak_guardrails": ("question", "expected_outcome", "actual_outcome", "model"),
    "output_guardrails": ("message", "expected_triggered", "actual_triggered", "expected_guardrails",
                          "actual_guardrails", "model"),
    "question_router": ("question", "expected_outcome", "actual_outcome", "confidence_score", "answer", "model"),
    "retrieval": ("question", "expected_exact_paths", "expected_chunk_uids", "expected_opensearch_index",
                  "actual_opensearch_index", "actual_search_results"),
    "topic_tagger": ("question", "status", "expected_primary_topic", "actual_primary_topic",
                     "expected_secondary_topic", "actual_secondary_topic", "error_message", "model"),
}
_SEARCH_FIELDS = ("exact_path", "chunk_uid", "weighted_score", "semantic_score")


def _json_value(value: Any) -> Any:
    # pydantic's JSON: NaN/inf as null
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def generated_lines(task: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """Their ``write_generated_to_output``: one compact pydantic JSON object per line."""
    import json

    lines = []
    for r in rows:
        item: dict[str, Any] = {}
        for name in GENERATED_FIELDS[task]:
            value = r.get(name)
            if task == "retrieval" and name == "actual_search_results":
                value = [dict(zip(_SEARCH_FIELDS, (_json_value(v) for v in hit), strict=False)) for hit in value or []]
            item[name] = _json_value(value)
        lines.append(json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)


#: Task -> builder of {file name: rows} (plus "confusion" for the router's PNG).
BUILDERS = {
    "jailbreak_guardrails": jailbreak_files,
    "output_guardrails": output_guardrails_files,
    "question_router": router_files,
    "retrieval": retrieval_files,
    "topic_tagger": topic_tagger_files,
}

#: Their tasks that set up problems.log (retrieval's CLI creates its folder without it).
WITH_PROBLEMS_LOG = frozenset({"jailbreak_guardrails", "output_guardrails", "question_router", "topic_tagger",
                               "rag_answers"})


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
