"""Classification metrics with intervals: binary counts, multiclass confusion matrices.

Proportions (accuracy, precision, recall) get Clopper-Pearson intervals; F-scores and the
multiclass averages, which are not proportions (``kind: score``), get intervals built as
Clopper-Pearson's is, from two Dirichlet posteriors over the confusion counts (one more
error for the lower limit, one more right answer for the upper). They depend only on the
counts (identical under xdist) and stay wide at small n, where a bootstrap collapses to
a point when every case is right. A 0/0 is undefined with the reason spelled out, never
a zero or a one.
"""

from __future__ import annotations

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


def f_beta_metric(tp: int, fp: int, fn: int, beta: float) -> Metric:
    """F-beta of one class's counts with its interval (``kind: score``)."""
    return _f_metric(tp, fp, fn, 0, beta)


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


#: Posterior draws for each limit of the multiclass averages' intervals.
DRAWS = 2000

_AVERAGES = ("macro_precision", "macro_recall", "macro_f1", "macro_f2",
             "weighted_precision", "weighted_recall", "weighted_f1", "weighted_f2")


def confusion_matrix(
    pairs: Sequence[tuple[str, str]], labels: Sequence[str] | None = None
) -> tuple[list[str], list[list[int]]]:
    """Rows expected, columns actual; ``labels``: the classes in their order (a declared
    label never seen still has its row and column), else the labels seen, sorted."""
    if labels is None:
        labels = sorted({e for e, _ in pairs} | {a for _, a in pairs})
    else:
        labels = list(labels)
        unknown = sorted(({e for e, _ in pairs} | {a for _, a in pairs}) - set(labels))
        if unknown:
            raise ValueError(f"labels not declared: {unknown}")
    pos = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for e, a in pairs:
        matrix[pos[e]][pos[a]] += 1
    return labels, matrix


def _per_class(
    matrix: list[list[float]], k: int, beta: float | None = None
) -> tuple[float | None, ...]:
    tp = matrix[k][k]
    predicted = sum(row[k] for row in matrix)
    actual = sum(matrix[k])
    p = tp / predicted if predicted else None
    r = tp / actual if actual else None
    f = f_beta(tp, predicted - tp, actual - tp)
    # F2 (GOV.UK Chat's router aggregate weights recall over precision) at index 4, so
    # the support stays at index 3; a suite's own beta at index 5.
    f2 = f_beta(tp, predicted - tp, actual - tp, 2.0)
    fb = f_beta(tp, predicted - tp, actual - tp, beta) if beta is not None else None
    return p, r, f, actual, f2, fb


def _scores(beta: float | None) -> tuple[tuple[str, int], ...]:
    """(name, index in :func:`_per_class`) of the averaged scores."""
    named = (("precision", 0), ("recall", 1), ("f1", 2), ("f2", 4))
    return named + ((("fbeta", 5),) if beta is not None else ())


def _averages(matrix: list[list[float]], beta: float | None = None) -> dict[str, float | None]:
    """Macro/weighted averages of a confusion matrix of counts."""
    n = len(matrix)
    total = sum(sum(row) for row in matrix)
    per = [_per_class(matrix, k, beta) for k in range(n)]
    out: dict[str, float | None] = {}
    for name, idx in _scores(beta):
        # Macro averages over classes where the value is defined (sklearn's zero_division
        # would silently count undefined classes as 0; we leave them out and say so).
        weighted: list[tuple[float, float]] = []  # (value, support) of the defined classes
        for c in per:
            value = c[idx]
            if value is not None:
                weighted.append((value, float(c[3] or 0.0)))
        out[f"macro_{name}"] = sum(v for v, _ in weighted) / len(weighted) if weighted else None
        wsum = sum(w for _, w in weighted)
        out[f"weighted_{name}"] = sum(v * w for v, w in weighted) / wsum if wsum else None
    out["accuracy"] = sum(matrix[k][k] for k in range(n)) / total if total else None
    return out


def _drawn_averages(cells: Any, defined: list[list[bool]], beta: float | None = None) -> dict[str, Any]:
    """The eight averages on each of ``cells`` (draws x K x K, unnormalised), vectorised.

    ``defined``: per class, whether its precision, recall, F1, F2 are defined in the
    observed counts; the others are left out of the draws' averages as they are out of
    the estimate's (a draw has no empty cell).
    """
    import numpy as np

    tp = np.diagonal(cells, axis1=1, axis2=2)
    predicted, actual = cells.sum(axis=1), cells.sum(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = {
            "precision": tp / predicted,
            "recall": tp / actual,
            "f1": 2 * tp / (predicted + actual),
            "f2": 5 * tp / (4 * actual + predicted),
        }
        if beta is not None:
            b2 = beta * beta
            per["fbeta"] = (1 + b2) * tp / (b2 * actual + predicted)
    out: dict[str, Any] = {}
    for i, (name, values) in enumerate(per.items()):
        keep = np.asarray([row[i] for row in defined])
        kept = np.where(keep, values, 0.0)
        out[f"macro_{name}"] = kept.sum(axis=1) / keep.sum()
        weights = np.where(keep, actual, 0.0)
        out[f"weighted_{name}"] = (kept * weights).sum(axis=1) / weights.sum(axis=1)
    return out


def _average_intervals(
    matrix: list[list[int]], point: dict[str, float | None], beta: float | None = None
) -> dict[str, tuple[float, float]]:
    """95% intervals of the macro/weighted averages, built as Clopper-Pearson's is.

    Clopper-Pearson takes its lower limit from Beta(x, n - x + 1), one more failure and
    no prior success, its upper from Beta(x + 1, n - x). Here the lower limit is the 2.5%
    quantile of an average under Dirichlet(counts + one error per class, spread over
    the class's off-diagonal cells: 1/(K - 1) each), the upper the 97.5% quantile under
    Dirichlet(counts + one right answer per class on the diagonal); a cell of parameter
    0 is 0. Each class's precision and recall then get exactly their Clopper-Pearson
    posteriors. The Jeffreys posterior used before (every cell + 1/2) put K^2 / 2
    pseudo-counts on a table of n cases: 12.5 on the Quick start's 12-case router, whose
    intervals then missed their own estimates (macro precision 0.893, [0.313, 0.680]).
    An interval always contains its estimate (the posteriors' quantiles almost always
    do; the rare draw that does not is widened to it).
    """
    k = len(matrix)
    flat = [float(c) for row in matrix for c in row]
    off = 1.0 / (k - 1) if k > 1 else 0.0
    pessimistic = [c + (0.0 if i // k == i % k else off) for i, c in enumerate(flat)]
    optimistic = [c + (1.0 if i // k == i % k else 0.0) for i, c in enumerate(flat)]
    import numpy as np

    observed = [_per_class([[float(c) for c in row] for row in matrix], i, beta) for i in range(k)]
    defined = [[c[idx] is not None for _, idx in _scores(beta)] for c in observed]
    low = _drawn_averages(stats.gamma_draws(pessimistic, DRAWS, "low").reshape(DRAWS, k, k), defined, beta)
    high = _drawn_averages(stats.gamma_draws(optimistic, DRAWS, "high").reshape(DRAWS, k, k), defined, beta)
    out: dict[str, tuple[float, float]] = {}
    for name in _average_names(beta):
        value = point[name]
        if value is None:
            continue
        lo = float(np.nanquantile(low[name], 0.025))
        hi = float(np.nanquantile(high[name], 0.975))
        out[name] = (min(lo, value), max(hi, value))
    return out


def _average_names(beta: float | None) -> tuple[str, ...]:
    return _AVERAGES + (("macro_fbeta", "weighted_fbeta") if beta is not None else ())


def multiclass_metrics(
    pairs: Sequence[tuple[str, str]], labels: Sequence[str] | None = None, beta: float | None = None
) -> tuple[MetricTree, dict[str, Any]]:
    """Accuracy, macro/weighted averages, per-class scores and the confusion matrix.

    ``labels``: the classes in their order (default: those seen, sorted); ``beta``: an
    F-beta of the suite's own besides F1 and F2 (``fbeta``, ``macro_fbeta``...)."""
    labels, matrix = confusion_matrix(pairs, labels)
    n = len(labels)
    correct = sum(matrix[k][k] for k in range(n))
    tree: MetricTree = {"accuracy": proportion(correct, len(pairs), "no cases")}
    point = _averages([[float(c) for c in row] for row in matrix], beta)
    intervals = _average_intervals(matrix, point, beta) if pairs else {}
    for name in _average_names(beta):
        value = point[name]
        if value is None:
            tree[name] = Metric(None, None, len(pairs), "0/0: no class has a defined value", "score")
        else:
            tree[name] = Metric(value, intervals[name], len(pairs), None, "score")
    per_class: MetricTree = {}
    for k, label in enumerate(labels):
        tp = matrix[k][k]
        predicted = sum(row[k] for row in matrix)
        actual = sum(matrix[k])
        node: MetricTree = {
            "precision": proportion(tp, predicted, f"{label!r} never predicted"),
            "recall": proportion(tp, actual, f"{label!r} never expected"),
            "f1": _f_metric(tp, predicted - tp, actual - tp, len(pairs) - predicted - actual + tp, 1.0),
            "support": count(actual),
        }
        if beta is not None:
            node["fbeta"] = _f_metric(tp, predicted - tp, actual - tp, 0, beta)
        per_class[label] = node
    tree["per_class"] = per_class
    return tree, {"confusion_matrix": {"labels": labels, "matrix": matrix, "rows": "expected", "columns": "actual"}}
