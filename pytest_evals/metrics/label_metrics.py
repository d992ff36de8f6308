"""Classification metrics with intervals: binary counts, multiclass confusion matrices.

Proportions (accuracy, precision, recall) get Wilson intervals; F-scores, which are not
proportions (``kind: score``), get a credible interval from a Jeffreys Dirichlet posterior
over the confusion counts: it depends only on the counts (identical under xdist) and
stays wide at small n, where a bootstrap collapses to a point when every case is right.
A 0/0 is undefined with the reason spelled out, never a zero or a one.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from pytest_evals.model.metric_value import Metric, MetricTree, count, proportion
from pytest_evals.stats import intervals as stats


def f_beta(tp: float, fp: float, fn: float, beta: float = 1.0) -> float | None:
    """F-beta = (1+b^2)TP / ((1+b^2)TP + b^2 FN + FP): undefined (None) only for 0/0.

    A detector that never fires while positives exist scores 0, not "undefined": the
    formula is defined there even though precision alone is 0/0.
    """
    b2 = beta * beta
    denom = (1 + b2) * tp + b2 * fn + fp
    return (1 + b2) * tp / denom if denom else None


def _f_metric(tp: int, fp: int, fn: int, tn: int, beta: float) -> Metric:
    value = f_beta(tp, fp, fn, beta)
    if value is None:
        return Metric(None, None, 0, "0/0: no actual and no predicted positives", "score")
    return Metric(value, stats.f_beta_posterior(tp, fp, fn, beta), tp + fp + fn, None, "score")


def binary_metrics(pairs: Sequence[tuple[bool, bool]]) -> MetricTree:
    """(expected, actual) pairs -> accuracy, precision, recall, F1, F2 and the counts."""
    tp = sum(1 for e, a in pairs if e and a)
    tn = sum(1 for e, a in pairs if not e and not a)
    fp = sum(1 for e, a in pairs if not e and a)
    fn = sum(1 for e, a in pairs if e and not a)
    return {
        "accuracy": proportion(tp + tn, len(pairs), "no cases"),
        "precision": proportion(tp, tp + fp, "no predicted positives"),
        "recall": proportion(tp, tp + fn, "no actual positives"),
        "f1": _f_metric(tp, fp, fn, tn, 1.0),
        "f2": _f_metric(tp, fp, fn, tn, 2.0),
        "tp": count(tp),
        "tn": count(tn),
        "fp": count(fp),
        "fn": count(fn),
    }


#: Posterior draws for the multiclass averages' intervals.
DRAWS = 1000


def confusion_matrix(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], list[list[int]]]:
    labels = sorted({e for e, _ in pairs} | {a for _, a in pairs})
    pos = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for e, a in pairs:
        matrix[pos[e]][pos[a]] += 1
    return labels, matrix


def _per_class(
    matrix: list[list[float]], k: int
) -> tuple[float | None, float | None, float | None, float, float | None]:
    tp = matrix[k][k]
    predicted = sum(row[k] for row in matrix)
    actual = sum(matrix[k])
    p = tp / predicted if predicted else None
    r = tp / actual if actual else None
    f = f_beta(tp, predicted - tp, actual - tp)
    # F2 (GOV.UK Chat's router aggregate weights recall over precision) at index 4, so
    # the support stays at index 3.
    f2 = f_beta(tp, predicted - tp, actual - tp, 2.0)
    return p, r, f, actual, f2


@functools.lru_cache(maxsize=8)
def _observed_cached(
    matrix: tuple[tuple[int, ...], ...],
) -> list[tuple[float | None, float | None, float | None, float, float | None]]:
    rows = [list(map(float, r)) for r in matrix]
    return [_per_class(rows, k) for k in range(len(rows))]


def _observed(matrix: list[list[int]]) -> list[tuple[float | None, float | None, float | None, float, float | None]]:
    return _observed_cached(tuple(tuple(r) for r in matrix))


def _averages(
    matrix: list[list[float]], defined_in: list[list[int]] | None = None
) -> dict[str, float | None]:
    """Macro/weighted averages of a confusion matrix of counts or of cell probabilities.

    ``defined_in``: the observed counts, whose undefined per-class values (0/0) are left
    out of the averages of ``matrix`` too (a posterior draw has no empty cell).
    """
    n = len(matrix)
    total = sum(sum(row) for row in matrix)
    per = [_per_class(matrix, k) for k in range(n)]
    seen = per if defined_in is None else _observed(defined_in)
    out: dict[str, float | None] = {}
    for name, idx in (("precision", 0), ("recall", 1), ("f1", 2), ("f2", 4)):
        values = [c[idx] if s[idx] is not None else None for c, s in zip(per, seen, strict=True)]
        # Macro averages over classes where the value is defined (sklearn's zero_division
        # would silently count undefined classes as 0; we leave them out and say so).
        defined = [v for v in values if v is not None]
        out[f"macro_{name}"] = sum(defined) / len(defined) if defined else None
        weighted = [(v, c[3]) for v, c in zip(values, per, strict=False) if v is not None]
        wsum = sum(w for _, w in weighted)
        out[f"weighted_{name}"] = sum(v * w for v, w in weighted) / wsum if wsum else None
    out["accuracy"] = sum(matrix[k][k] for k in range(n)) / total if total else None
    return out


def multiclass_metrics(pairs: Sequence[tuple[str, str]]) -> tuple[MetricTree, dict[str, Any]]:
    labels, matrix = confusion_matrix(pairs)
    n = len(labels)
    correct = sum(matrix[k][k] for k in range(n))
    tree: MetricTree = {"accuracy": proportion(correct, len(pairs), "no cases")}
    point = _averages([[float(c) for c in row] for row in matrix])
    flat = [c for row in matrix for c in row]

    names = ("macro_precision", "macro_recall", "macro_f1", "macro_f2",
             "weighted_precision", "weighted_recall", "weighted_f1", "weighted_f2")
    # One set of posterior draws for all eight averages (each draw's averages computed once).
    posterior = stats.dirichlet_draws(flat, DRAWS) if sum(flat) else []
    drawn = [_averages([p[i * n : (i + 1) * n] for i in range(n)], matrix) for p in posterior]
    for name in names:
        value = point[name]
        if value is None:
            tree[name] = Metric(None, None, len(pairs), "0/0: no class has a defined value", "score")
        else:
            tree[name] = Metric(value, stats.credible_interval([d[name] for d in drawn], DRAWS), len(pairs), None, "score")
    per_class: MetricTree = {}
    for k, label in enumerate(labels):
        tp = matrix[k][k]
        predicted = sum(row[k] for row in matrix)
        actual = sum(matrix[k])
        per_class[label] = {
            "precision": proportion(tp, predicted, f"{label!r} never predicted"),
            "recall": proportion(tp, actual, f"{label!r} never expected"),
            "f1": _f_metric(tp, predicted - tp, actual - tp, len(pairs) - predicted - actual + tp, 1.0),
            "support": count(actual),
        }
    tree["per_class"] = per_class
    return tree, {"confusion_matrix": {"labels": labels, "matrix": matrix, "rows": "expected", "columns": "actual"}}
