"""Aggregated scores of a HarpIA suite, computed on the controller from light case results.

Each case carries its per-metric results and compute time in ``CaseResult.data`` (and,
when a corpus-level metric is enabled, its hypothesis and references). Corpus-level
metrics (BLEU, sacreBLEU, chrF, TER) are recomputed here over all scored instances, in
case order, so one process and ``-n 2`` give the same score; the others are means of the
instance results. A metric's elapsed time is the compute time of its instances (a model
batch is shared evenly among its instances) plus this corpus-level computation.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_evals.families.harpia.document import MetricSpec
from pytest_evals.metrics.reference import Result
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.metric_value import Metric, MetricTree, mean_metric, proportion
from pytest_evals.stats import intervals as stats

#: Name of the HarpIA section in a suite summary's ``tables``.
TABLE_KEY = "harpia"
#: CaseResult.data keys.
DATA_METRICS = "metrics"
DATA_HYPOTHESIS = "hypothesis"
DATA_REFERENCES = "references"
DATA_INSTANCE_ID = "instance_id"
#: The suite's name (the log's ``suite`` field and ``{suite}`` in paths; CaseResult.suite is its node id).
DATA_SUITE_NAME = "suite_name"
#: metric name -> why it could not score this instance (the instance is an error).
DATA_ERRORS = "errors"
#: The output's time key as HarpIA Lab's description spells it (``elapsed_time`` is ours).
ELAPSED_HARPIA = "elapsed time"
#: Boolean flags a metric may set on an instance result (reported as output warnings).
RESULT_FLAGS = ("truncated", "empty")


def elapsed_of(obj: dict[str, Any]) -> float | None:
    """An output object's elapsed time, under either spelling (files from HarpIA Lab or ours)."""
    for key in ("elapsed_time", ELAPSED_HARPIA, "elapsed-time", "elapsedTime"):
        value = obj.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


@dataclass
class MetricOutcome:
    spec: MetricSpec
    score: Result
    #: Instances the score is computed over.
    instances: int
    elapsed: float
    #: Loading libraries and models, summed over the processes that did it.
    setup: float
    #: "corpus": a corpus-level statistic; "mean": the mean of the instance results.
    level: str
    #: Primary value of each instance result, in case order (for summaries).
    values: list[float]
    passed_flags: list[bool]
    #: Instance ids whose result carries a flag (``truncated``, ``empty``), by flag.
    flagged: dict[str, list[str]] = field(default_factory=dict)

    def warnings(self) -> list[str]:
        out = []
        truncated = self.flagged.get("truncated", [])
        if truncated:
            out.append(
                f"{len(truncated)} instance(s) had a text longer than the model's token limit, truncated "
                f"before scoring (flag 'truncated' in the log): {', '.join(truncated[:10])}"
                + (" ..." if len(truncated) > 10 else "")
            )
        empty = self.flagged.get("empty", [])
        if empty:
            out.append(
                f"{len(empty)} instance(s) had an empty output or reference, given the library's defined "
                f"score (flag 'empty' in the log): {', '.join(empty[:10])}" + (" ..." if len(empty) > 10 else "")
            )
        return out

    def to_output(self) -> dict[str, Any]:
        """This metric's object in the HarpIA output file (see docs/harpia.md)."""
        elapsed = round(self.elapsed, 6)
        out: dict[str, Any] = {
            "id": self.spec.id,
            "name": self.spec.name,
            "parameters": self.spec.parameters,
            "resolved_parameters": self.spec.metric.resolved_parameters(),
            "score": self.score,
            # Ours, and the field name HarpIA Lab's description uses; the same number.
            "elapsed_time": elapsed,
            ELAPSED_HARPIA: elapsed,
            "setup_time": round(self.setup, 6),
            "instances": self.instances,
            "level": self.level,
        }
        notes = self.spec.metric.notes()
        if notes:
            out["notes"] = notes
        warnings = self.warnings()
        if warnings:
            out["warnings"] = warnings
        return out


def instance_entries(results: Sequence[CaseResult], name: str) -> list[dict[str, Any]]:
    out = []
    for r in results:
        entry = (r.data.get(DATA_METRICS) or {}).get(name)
        if entry is not None and entry.get("result") is not None:
            out.append(entry)
    return out


def compute_outcome(spec: MetricSpec, results: Sequence[CaseResult]) -> MetricOutcome:
    metric = spec.metric
    entries = instance_entries(results, spec.name)
    instance_time = sum(float(e.get("elapsed") or 0.0) for e in entries)
    setup = sum(float(e.get("setup") or 0.0) for e in entries)
    started = time.perf_counter()
    if metric.corpus_level:
        rows = [r for r in results if DATA_HYPOTHESIS in r.data]
        score = metric.corpus_score([r.data[DATA_HYPOTHESIS] for r in rows], [r.data[DATA_REFERENCES] for r in rows])
        n, level = len(rows), "corpus"
    else:
        score = metric.mean_score([e["result"] for e in entries])
        n, level = len(entries), "mean"
    elapsed = instance_time + (time.perf_counter() - started)
    values = [float(e["result"][metric.primary]) for e in entries if e["result"].get(metric.primary) is not None]
    flags = [bool(e["passed"]) for e in entries if e.get("passed") is not None]
    flagged: dict[str, list[str]] = {}
    for r in results:
        entry = (r.data.get(DATA_METRICS) or {}).get(spec.name)
        if entry is None or not isinstance(entry.get("result"), dict):
            continue
        for flag in RESULT_FLAGS:
            if entry["result"].get(flag):
                flagged.setdefault(flag, []).append(str(r.data.get(DATA_INSTANCE_ID, r.case_id)))
    return MetricOutcome(spec, score, n, elapsed, setup, level, values, flags, flagged)


def compute_outcomes(specs: Sequence[MetricSpec], results: Sequence[CaseResult]) -> list[MetricOutcome]:
    ordered = sorted(results, key=lambda r: (r.index, r.case_id))
    return [compute_outcome(spec, ordered) for spec in specs]


def key_bounds(metric: Any, key: str) -> tuple[float, float] | None:
    """The fixed range of a metric's key, if it has one."""
    return next(((low, high) for name, low, high in metric.bounds if name == key), None)


def _key_metric(outcome: MetricOutcome, key: str, entries: list[dict[str, Any]]) -> Metric:
    value = outcome.score.get(key)
    if outcome.level == "corpus":
        if value is None:
            return Metric(None, None, 0, "0/0: no scored instances", "score")
        return Metric(float(value), None, outcome.instances, None, "score")
    values = [float(e["result"][key]) for e in entries if e["result"].get(key) is not None]
    if outcome.spec.id == "exact_match":
        return proportion(sum(1 for v in values if v >= 1.0), len(values), "no scored instances")
    return mean_metric(values, empty="no scored instances", bounds=key_bounds(outcome.spec.metric, key))


def _instance_summary(outcome: MetricOutcome) -> MetricTree:
    """Sentence-level view of a corpus metric, and the pass rate of a metric with a threshold."""
    tree: MetricTree = {}
    if outcome.level == "corpus":
        values = outcome.values
        bounds = key_bounds(outcome.spec.metric, outcome.spec.metric.primary)
        tree["mean"] = mean_metric(values, empty="no scored instances", bounds=bounds)
        tree["median"] = Metric(stats.median(values) if values else None, None, len(values),
                                None if values else "0/0: no scored instances", "score")
    if outcome.spec.metric.params.threshold is not None:
        flags = outcome.passed_flags
        tree["pass_rate"] = proportion(sum(flags), len(flags), "no scored instances")
    return tree


def metric_tree(outcomes: Sequence[MetricOutcome], results: Sequence[CaseResult]) -> MetricTree:
    """``{name: Metric}`` (or ``{name: {key: Metric}}`` for several keys), plus ``per_instance``."""
    tree: MetricTree = {}
    per_instance: MetricTree = {}
    for outcome in outcomes:
        metric = outcome.spec.metric
        entries = instance_entries(results, outcome.spec.name)
        if len(metric.keys) == 1:
            tree[outcome.spec.name] = _key_metric(outcome, metric.keys[0], entries)
        else:
            tree[outcome.spec.name] = {k: _key_metric(outcome, k, entries) for k in metric.keys}
        summary = _instance_summary(outcome) if metric.sentence_level else {}
        if summary:
            per_instance[outcome.spec.name] = summary
    if per_instance:
        tree["per_instance"] = per_instance
    return tree
