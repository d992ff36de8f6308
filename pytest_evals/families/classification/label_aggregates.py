"""The generic classification task's aggregates and their per-case contributions.

Over (expected, actual) label keys, in the declared label order:

- ``accuracy``; per class (one against the rest) ``precision``, ``recall``, ``f1``,
  ``f2``, the suite's ``fbeta`` and ``support``; ``macro_*`` and ``weighted_*`` averages
  of precision, recall, F1, F2 (and ``fbeta``); the confusion matrix (a table);
- with a positive label (always in a binary suite): ``precision``, ``recall``,
  ``specificity``, ``f1``, ``f2``, ``fbeta`` of that label and the counts ``tp``, ``tn``,
  ``fp``, ``fn``;
- ``baselines``: what a classifier that never looks at the input scores on the same
  cases: ``majority`` (always the most frequent expected label) and, with a positive
  label, ``always_positive``.

Every proportion has its Clopper-Pearson interval and every F-score and average the
interval of :mod:`pytest_evals.metrics.label_metrics`. A class's undefined values (0/0)
are left out of the macro and weighted averages, as scikit-learn does with
``zero_division=np.nan``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_evals.metrics.label_metrics import binary_metrics, f_beta_metric, multiclass_metrics
from pytest_evals.model.metric_value import Metric, MetricTree, proportion
from pytest_evals.tasks.task_contract import Contribution

#: Scores of one class against the rest, each a ratio of per-case sums.
_CLASS_SCORES = ("precision", "recall", "f1", "f2", "fbeta")
#: The positive label's scores, each a ratio of per-case sums.
_POSITIVE_SCORES = (*_CLASS_SCORES, "specificity")
#: Averages that are no ratio of per-case sums (weighted recall is: it is the accuracy).
AVERAGES = tuple(f"{kind}_{score}" for kind in ("macro", "weighted")
                 for score in ("precision", "recall", "f1", "f2", "fbeta"))


def _counts(matrix: list[list[int]], k: int) -> tuple[int, int, int, int]:
    """(tp, fp, fn, tn) of class ``k`` against the rest."""
    tp = matrix[k][k]
    predicted = sum(row[k] for row in matrix)
    actual = sum(matrix[k])
    total = sum(sum(row) for row in matrix)
    return tp, predicted - tp, actual - tp, total - predicted - actual + tp


def _baselines(pairs: Sequence[tuple[str, str]], keys: list[str], positive: str | None) -> tuple[MetricTree, dict[str, str]]:
    """Scores of classifiers that ignore the input. Accuracy has its interval; the F-scores
    are point values (no posterior draws: a baseline is read, rarely gated)."""
    n = len(pairs)
    seen = Counter(e for e, _ in pairs)
    # The most frequent expected label; a tie goes to the first declared.
    majority = max(keys, key=lambda k: (seen[k], -keys.index(k)))
    m = seen[majority]
    # Always ``majority``: its F1 is 2m / (n + m); every other expected label scores 0; a
    # label never expected (nor predicted) is undefined and left out, as in the suite's.
    f1_major = 2 * m / (n + m) if n else None
    present = sum(1 for k in keys if seen[k])
    node: MetricTree = {
        "accuracy": proportion(m, n, "no cases"),
        "macro_f1": _point(f1_major / present if f1_major is not None and present else None),
        "weighted_f1": _point(f1_major * m / n if f1_major is not None else None),
    }
    if positive is not None:
        node["f1"] = _point(f1_major if majority == positive else (0.0 if seen[positive] else None))
    tree: MetricTree = {"majority": node}
    names = {"majority": majority}
    if positive is not None:
        p = seen[positive]
        tree["always_positive"] = {
            "accuracy": proportion(p, n, "no cases"),
            "precision": proportion(p, n, "no cases"),
            "recall": proportion(p, p, "no actual positives"),
            "f1": _point(2 * p / (n + p) if n else None),
        }
        names["always_positive"] = positive
    return tree, names


def _point(value: float | None) -> Metric:
    """A score without an interval; undefined (0/0) when there is nothing to score."""
    if value is None:
        return Metric(None, None, 0, "0/0: no cases", "score")
    return Metric(value, None, None, None, "score")


def label_aggregates(
    pairs: Sequence[tuple[str, str]], keys: list[str], positive: str | None, beta: float | None
) -> tuple[MetricTree, dict[str, Any]]:
    """The metric tree and tables of (expected, actual) label keys (module docstring)."""
    multi, tables = multiclass_metrics(pairs, keys, beta)
    matrix: list[list[int]] = tables["confusion_matrix"]["matrix"]
    tree: MetricTree = {"accuracy": multi["accuracy"]}
    if positive is not None:
        binary = binary_metrics([(e == positive, a == positive) for e, a in pairs])
        tp, fp, fn, tn = _counts(matrix, keys.index(positive))
        tree["precision"], tree["recall"] = binary["precision"], binary["recall"]
        tree["specificity"] = proportion(tn, tn + fp, "no actual negatives")
        tree["f1"], tree["f2"] = binary["f1"], binary["f2"]
        if beta is not None:
            tree["fbeta"] = f_beta_metric(tp, fp, fn, beta)
        for name in ("tp", "tn", "fp", "fn"):
            tree[name] = binary[name]
    for name in AVERAGES:
        if name in multi:
            tree[name] = multi[name]
    per_class: MetricTree = {}
    given = multi["per_class"]
    assert isinstance(given, dict)
    for k, key in enumerate(keys):
        node = given[key]
        assert isinstance(node, dict)
        tp, fp, fn, _ = _counts(matrix, k)
        ordered: MetricTree = {"precision": node["precision"], "recall": node["recall"], "f1": node["f1"],
                               "f2": f_beta_metric(tp, fp, fn, 2.0)}
        if "fbeta" in node:
            ordered["fbeta"] = node["fbeta"]
        ordered["support"] = node["support"]
        per_class[key] = ordered
    tree["per_class"] = per_class
    tree["baselines"], names = _baselines(pairs, keys, positive)
    tables["baselines"] = names
    return tree, tables


def regression_problem(metric: str, positive: str | None) -> str | None:
    """Why a regression gate (``max_drop``/``max_rise``) on ``metric`` cannot be paired,
    or None when it can or the core says why not (a metric the suite does not have)."""
    instead = ("gate accuracy, " + ("precision, recall, f1, " if positive else "")
               + "or per_class.<label>.recall (precision, f1, ...) with max_drop instead")
    if metric in AVERAGES and metric != "weighted_recall":
        return (f"{metric} is an average over classes, not a sum over cases, so no paired test compares it with "
                f"a baseline; {instead}")
    if metric in ("tp", "tn", "fp", "fn") or (metric.startswith("per_class.") and metric.endswith(".support")):
        return f"{metric} is a count, which the paired test does not compare; {instead}"
    if metric.startswith("baselines."):
        return f"{metric} scores a classifier that ignores the input, the same in every run; {instead}"
    return None


def _ratio(score: str, exp: bool, pred: bool, beta: float | None) -> Contribution | None:
    tp, fp, fn = float(exp and pred), float(pred and not exp), float(exp and not pred)
    if score == "precision":
        return tp, float(pred)
    if score == "recall":
        return tp, float(exp)
    if score == "specificity":
        return float(not exp and not pred), float(not exp)
    b = {"f1": 1.0, "f2": 2.0}.get(score, beta)
    if b is None:
        return None
    b2 = b * b
    return (1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp


def label_contribution(
    data: Mapping[str, Any], metric: str, positive: str | None, beta: float | None
) -> Contribution | Any | None:
    """One case's (num, den) share of ``metric``; NotImplemented for the metrics the
    core's status rules handle (accuracy, pass_rate); None when the case has no say."""
    if metric in ("accuracy", "pass_rate"):
        return NotImplemented
    expected, actual = data.get("expected"), data.get("actual")
    if not isinstance(expected, str) or not isinstance(actual, str):
        return None
    if metric == "weighted_recall":
        return float(expected == actual), 1.0
    parts = metric.split(".")
    if len(parts) == 1 and parts[0] in _POSITIVE_SCORES and positive is not None:
        return _ratio(parts[0], expected == positive, actual == positive, beta)
    if len(parts) >= 3 and parts[0] == "per_class" and parts[-1] in _CLASS_SCORES:
        # A label may hold dots: everything between ``per_class.`` and the score.
        label = ".".join(parts[1:-1])
        return _ratio(parts[-1], expected == label, actual == label, beta)
    return None
