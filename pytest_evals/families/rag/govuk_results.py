"""GOV.UK Chat's rag_answers result files, their way (``--evals-govuk-outputs``).

Their ``rag_answers/evaluate.py`` turns DeepEval's results into ``EvaluationResult``
dataclasses (one per case, every run's metric outputs inside) and writes three files with
pandas' ``to_csv``:

- ``tidy_results.csv``: ``pd.DataFrame(results)``: a first, unnamed column with the row
  number, then ``id, input, actual_output, retrieval_context, run_metric_outputs,
  actual_opensearch_index, model, expected_opensearch_index, expected_output``; lists
  and the per-run dicts as Python ``repr``, ``None`` as an empty cell;
- ``results_per_input.csv``: the scores grouped by case and metric (mean, sample std,
  count of scored runs), metrics as a second header row (pandas' two-level columns),
  rows sorted by id;
- ``results_summary.csv``: per metric the median, mean and sample std of the per-case
  means and the number of scored runs.

Nothing here imports pandas (it is not a dependency of ours): the statistics are taken
the way pandas takes them (compensated sums in the group means, Welford's update in the
group variances, numpy's sums over the whole column with undefined values as 0 in the
column statistics) and the cells are written as ``to_csv`` writes them (floats as
``repr``, NaN and ``None`` empty, ``\\n`` row ends). The metric names are DeepEval's
display names (``Faithfulness``, ``Answer Relevancy``...), as their metric objects report
them.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from pytest_evals.families.rag.govuk_context import govuk_flattened

NAN = float("nan")

#: Our metric name -> the name their metric object reports (its ``__name__``).
DEEPEVAL_NAMES: dict[str, str] = {
    "faithfulness": "Faithfulness",
    "relevance": "Answer Relevancy",
    "bias": "Bias",
    "factual_precision": "Factual Precision",
    "factual_recall": "Factual Recall",
    "absence_of_factual_contradictions": "Absence of Factual Contradictions",
    "context_relevancy": "Context Relevancy",
    "coherence": "Coherence",
}

#: Their ``EvaluationResult`` fields, in order (tidy_results.csv's columns).
TIDY_FIELDS: tuple[str, ...] = ("id", "input", "actual_output", "retrieval_context", "run_metric_outputs",
                                "actual_opensearch_index", "model", "expected_opensearch_index", "expected_output")
#: The grouping columns of results_per_input.csv, before the metrics.
GROUP_FIELDS: tuple[str, ...] = ("id", "input", "expected_opensearch_index", "actual_opensearch_index")
#: Their ``StructuredContext`` fields, in order (base_path is an extra field of ours).
CONTEXT_FIELDS: tuple[str, ...] = ("title", "heading_hierarchy", "description", "html_content", "exact_path")
#: Their ``EvaluationTestCase`` fields, in order (generated.jsonl's keys).
GENERATED_FIELDS: tuple[str, ...] = ("id", "question", "ideal_answer", "expected_opensearch_index", "llm_answer",
                                     "structured_contexts", "actual_opensearch_index", "model")
#: Key of the case fields a GOV.UK-shaped rag case keeps in its details for these files.
DETAILS_KEY = "govuk_case"


def case_fields(case: Any) -> dict[str, Any]:
    """The case as their ``EvaluationTestCase`` holds it (kept in the case's details)."""
    extra = dict(getattr(case, "model_extra", None) or {})
    contexts = [govuk_flattened(chunk) for chunk in case.structured_contexts or []]
    chunks = [{**{k: getattr(c, k, None) for k in CONTEXT_FIELDS}, "base_path": (c.model_extra or {}).get("base_path")}
              for c in case.structured_contexts or []]
    return {
        "id": extra.get("id"),
        "question": case.question,
        "structured_contexts": chunks,
        "ideal_answer": case.ideal_answer,
        "llm_answer": case.llm_answer,
        "retrieval_context": contexts,
        "expected_opensearch_index": extra.get("expected_opensearch_index"),
        "actual_opensearch_index": extra.get("actual_opensearch_index"),
        "model": extra.get("model"),
    }


def metric_name(name: str) -> str:
    return DEEPEVAL_NAMES.get(name, name)


def _success(score: float, entry: Mapping[str, Any], run: Mapping[str, Any]) -> bool:
    """DeepEval's ``is_successful`` for one run: exact comparison with the threshold."""
    verdict = (run.get("verdicts") or {}).get("deepeval") if isinstance(run.get("verdicts"), dict) else None
    if isinstance(verdict, dict) and isinstance(verdict.get("success"), bool):
        return bool(verdict["success"])
    threshold = float(entry.get("threshold") or 0.0)
    return score <= threshold if entry.get("lower_is_better") else score >= threshold


def run_outputs(metrics: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Their ``run_metric_outputs``: run by run, the metrics in the config's order.

    A run that produced no score has ``score None, success False`` and its error, as
    DeepEval records a metric that raised under ``ignore_errors=True``."""
    per_metric: list[tuple[str, dict[int, dict[str, Any]]]] = []
    n_runs = 0
    for name, entry in metrics.items():
        runs = list(entry.get("runs") or [])
        errors = list(entry.get("errors") or [])
        failed = {int(e.get("repeat", 0)): e for e in errors}
        total = len(runs) + len(errors)
        n_runs = max(n_runs, total)
        # successful runs were kept in repeat order, skipping the failed ones
        ok_repeats = [i for i in range(total) if i not in failed]
        by_run: dict[int, dict[str, Any]] = {}
        for i, run in zip(ok_repeats, runs, strict=False):
            score = float(run["score"])
            by_run[i] = {"score": score, "cost": None, "reason": run.get("reason"),
                         "success": _success(score, entry, run), "error": None}
        for i, err in failed.items():
            by_run[i] = {"score": None, "cost": None, "reason": None, "success": False,
                         "error": str(err.get("message") or "")}
        per_metric.append((metric_name(name), by_run))
    out: list[dict[str, Any]] = []
    for i in range(n_runs):
        for name, by_run in per_metric:
            if i in by_run:
                out.append({"run": i, "metric": name, **by_run[i]})
    return out


def evaluation_result(case: Mapping[str, Any], case_id: str, metrics: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One of their ``EvaluationResult`` rows (as ``dataclasses.asdict`` gives it)."""
    return {
        "id": case.get("id") if case.get("id") is not None else case_id,
        "input": case.get("question"),
        "actual_output": case.get("llm_answer"),
        "retrieval_context": list(case.get("retrieval_context") or []),
        "run_metric_outputs": run_outputs(metrics),
        "actual_opensearch_index": case.get("actual_opensearch_index"),
        "model": case.get("model"),
        "expected_opensearch_index": case.get("expected_opensearch_index"),
        "expected_output": case.get("ideal_answer"),
    }


def results_from_details(full: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """EvaluationResult rows for the scored cases among full case results (in the given order)."""
    rows = []
    for r in full:
        details = r.get("details") or {}
        case = details.get(DETAILS_KEY)
        metrics = details.get("metrics")
        if not isinstance(case, dict) or not isinstance(metrics, dict) or not metrics:
            continue
        rows.append(evaluation_result(case, str(r.get("case_id")), metrics))
    return rows


# -- pandas' cells and statistics -------------------------------------------------------------------
def cell(value: Any) -> str:
    """A cell as ``DataFrame.to_csv`` writes it: NaN and None empty, the rest ``str``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def csv_lines(rows: Sequence[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow([cell(v) for v in row])
    return out.getvalue()


def group_mean(values: Sequence[float]) -> float:
    """pandas' grouped mean: a compensated (Kahan) sum of the defined values over their count."""
    total = comp = 0.0
    n = 0
    for v in values:
        if math.isnan(v):
            continue
        n += 1
        y = v - comp
        t = total + y
        comp = t - total - y
        if comp != comp:  # inf - inf
            comp = 0.0
        total = t
    return total / n if n else NAN


def group_std(values: Sequence[float]) -> float:
    """pandas' grouped sample std: Welford's update, then the square root."""
    n = 0
    mean = m2 = 0.0
    for v in values:
        if math.isnan(v):
            continue
        n += 1
        old = mean
        mean += (v - old) / n
        m2 += (v - mean) * (v - old)
    return math.sqrt(m2 / (n - 1)) if n > 1 else NAN


def column_means(columns: Sequence[Sequence[float]]) -> list[float]:
    """pandas' ``DataFrame.mean()`` over the per-case means, one column per metric.

    pandas hands the whole block (metrics x cases) to numpy with undefined values as 0.
    When some value is undefined it works on a filled copy, whose rows numpy sums
    pairwise; otherwise on the frame's own strided view, which numpy sums one value after
    the other (unless there is a single metric: then pairwise again). The last digit
    depends on it."""
    arr = np.asarray(columns, dtype=float).reshape(len(columns), -1)
    mask = np.isnan(arr)
    counts = (~mask).sum(axis=1)
    if mask.any() or arr.shape[0] == 1:
        sums = [float(v) for v in np.where(mask, 0.0, arr).sum(axis=1)]
    else:
        sums = []
        for row in arr.tolist():
            total = 0.0
            for v in row:
                total += v
            sums.append(total)
    return [s / int(c) if c else NAN for s, c in zip(sums, counts, strict=True)]


def column_std(values: Sequence[float]) -> float:
    """pandas' column sample std (``nanvar``, ddof 1, then the square root): it always
    works on a filled copy, so numpy's sums are pairwise."""
    arr = np.asarray(values, dtype=float)
    mask = np.isnan(arr)
    count = int((~mask).sum())
    if count < 2:
        return NAN
    filled = np.where(mask, 0.0, arr)
    avg = filled.sum(dtype=np.float64) / count
    sqr = np.where(mask, 0.0, (avg - filled) ** 2)
    return float(np.sqrt(sqr.sum(dtype=np.float64) / (count - 1)))


def column_median(values: Sequence[float]) -> float:
    defined = [v for v in values if not math.isnan(v)]
    return float(np.median(np.asarray(defined, dtype=float))) if defined else NAN


def _sort_key(value: Any) -> tuple[int, str]:
    # pandas' groupby sorts its keys with missing ones (dropna=False) last
    return (1, "") if value is None else (0, str(value))


def per_input(results: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """The metrics (sorted, as pandas' groupby sorts them) and one row per case: the
    grouping fields and per metric ``(mean, std, count)``."""
    metrics = sorted({o["metric"] for r in results for o in r["run_metric_outputs"]})
    rows = []
    for r in results:
        scores: dict[str, list[float]] = {m: [] for m in metrics}
        for o in r["run_metric_outputs"]:
            scores[o["metric"]].append(NAN if o["score"] is None else float(o["score"]))
        stats = {m: (group_mean(v), group_std(v), sum(1 for x in v if not math.isnan(x))) for m, v in scores.items()}
        rows.append({**{f: r.get(f) for f in GROUP_FIELDS}, "stats": stats})
    rows.sort(key=lambda row: tuple(_sort_key(row[f]) for f in GROUP_FIELDS))
    return metrics, rows


def tidy_results_csv(results: Sequence[Mapping[str, Any]]) -> str:
    lines: list[list[Any]] = [["", *TIDY_FIELDS]]
    for i, r in enumerate(results):
        lines.append([i, *(r.get(f) for f in TIDY_FIELDS)])
    return csv_lines(lines)


def results_per_input_csv(results: Sequence[Mapping[str, Any]]) -> str:
    metrics, rows = per_input(results)
    stats = ("mean", "std", "n_datapoints")
    lines: list[list[Any]] = [
        ["", *GROUP_FIELDS, *(s for s in stats for _m in metrics)],
        ["metric", *("" for _f in GROUP_FIELDS), *(m for _s in stats for m in metrics)],
    ]
    for i, row in enumerate(rows):
        values = [row["stats"][m][k] for k in range(3) for m in metrics]
        lines.append([i, *(row[f] for f in GROUP_FIELDS), *values])
    return csv_lines(lines)


def results_summary_csv(results: Sequence[Mapping[str, Any]]) -> str:
    metrics, rows = per_input(results)
    lines: list[list[Any]] = [["metric", "median", "mean", "std", "n_datapoints"]]
    columns = [[row["stats"][m][0] for row in rows] for m in metrics]
    for m, means, mean in zip(metrics, columns, column_means(columns), strict=True):
        lines.append([m, column_median(means), mean, column_std(means), sum(row["stats"][m][2] for row in rows)])
    return csv_lines(lines)


def problem_lines(results: Sequence[Mapping[str, Any]], stamp: str) -> list[str]:
    """Their ``_log_metric_errors``: one WARNING per run of a metric that raised."""
    lines = []
    for r in results:
        for o in r["run_metric_outputs"]:
            if o["error"]:
                message = " ".join(str(o["error"]).split())
                lines.append(f"{stamp}  WARNING  pytest_evals.rag_answers: Metric error "
                             f"(id={r['id']}, metric={o['metric']}, run={o['run']}): {message}")
    return lines


def files(results: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """File name -> text, for the scored cases (none when no case was scored)."""
    if not results:
        return {}
    return {
        "tidy_results.csv": tidy_results_csv(results),
        "results_per_input.csv": results_per_input_csv(results),
        "results_summary.csv": results_summary_csv(results),
    }


def config_data(config: Mapping[str, Any], generate: bool) -> dict[str, Any]:
    """Their ``TaskConfig.model_dump(mode="json")``: each metric's model and temperature
    inside ``llm_judge``, as their validator moves them."""
    metrics = []
    for m in config.get("metrics") or []:
        if not isinstance(m, Mapping):
            continue
        metrics.append({"name": m.get("name"), "threshold": m.get("threshold"),
                        "llm_judge": {"model": m.get("model"), "temperature": float(m.get("temperature") or 0.0)}})
    return {"what": config.get("what"), "generate": generate, "input_path": config.get("input_path"),
            "claude_generation_model": config.get("claude_generation_model"), "metrics": metrics,
            "n_runs": config.get("n_runs")}


def generated_lines(full: Iterable[Mapping[str, Any]]) -> str:
    """Their ``write_generated_to_output``: ``EvaluationTestCase.model_dump_json()`` per case."""
    import json

    lines = []
    for r in full:
        case = (r.get("details") or {}).get(DETAILS_KEY)
        if not isinstance(case, dict):
            continue
        item = {name: case.get(name) for name in GENERATED_FIELDS}
        if item["id"] is None:
            item["id"] = str(r.get("case_id"))
        lines.append(json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)
