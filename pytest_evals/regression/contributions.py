"""Per-case contributions to a metric, so that metric = sum(num) / sum(den).

The regression tests need, for one gated metric, what each case adds to it. The rules
below read the plain data every built-in task already puts on its results; a task can
take over with a ``paired_contribution(result_data, scores, status, metric)`` method
returning ``(num, den)`` or None (a third-party family needs no core change).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Contribution = tuple[float, float]
#: (data, scores, status) -> (num, den) for one case, None when the case has no say.
Rule = Callable[[Mapping[str, Any], Mapping[str, Any], str], "Contribution | None"]

_POSITIVE = {"yes", "true", "1", "jailbreak", "hallucinated", "triggered"}


def _label(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    if isinstance(value, str):
        return value.strip().lower() in _POSITIVE
    return None


def _binary(data: Mapping[str, Any]) -> tuple[bool, bool | None] | None:
    """(expected, predicted) for binary-labelled cases; predicted None = no answer."""
    if "expected" not in data:
        return None
    expected = _label(data["expected"])
    if expected is None:
        return None
    raw = data.get("actual", data.get("predicted"))
    return expected, (None if raw is None else _label(raw))


#: (expected, predicted) -> (num, den): the rules of binary-labelled metrics, applied to
#: labels read once per case (pairing reads each case's labels once for every gate).
LabelRule = Callable[[bool, "bool | None"], Contribution]


def _fbeta_labels(beta: float) -> LabelRule:
    b2 = beta * beta

    def rule(exp: bool, pred: bool | None) -> Contribution:
        tp = float(exp and pred is True)
        fp = float((not exp) and pred is True)
        fn = float(exp and pred is not True)
        return (1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp

    return rule


LABEL_RULES: dict[str, LabelRule] = {
    "precision": lambda exp, pred: (float(exp and pred is True), float(pred is True)),
    "recall": lambda exp, pred: (float(exp and pred is True), float(exp)),
    "specificity": lambda exp, pred: (float((not exp) and pred is not True), float(not exp)),
    "f1": _fbeta_labels(1.0),
    "f2": _fbeta_labels(2.0),
    "f0.5": _fbeta_labels(0.5),
}


def labels(data: Mapping[str, Any]) -> tuple[bool, bool | None] | None:
    """A case's (expected, predicted) labels, None when it has no binary label."""
    return _binary(data)


def _from_labels(rule: LabelRule) -> Rule:
    def per_case(data: Mapping[str, Any], scores: Mapping[str, Any], status: str) -> Contribution | None:
        pair = _binary(data)
        return None if pair is None else rule(*pair)

    return per_case


def _accuracy(data: Mapping[str, Any], scores: Mapping[str, Any], status: str) -> Contribution | None:
    if status not in ("passed", "failed"):
        return None
    if "correct" in scores and isinstance(scores["correct"], (int, float)):
        return float(scores["correct"] >= 0.5), 1.0
    return float(status == "passed"), 1.0


RULES: dict[str, Rule] = {
    "accuracy": _accuracy,
    "pass_rate": _accuracy,
    **{name: _from_labels(rule) for name, rule in LABEL_RULES.items()},
}


def rule_for(metric: str) -> Rule | None:
    """The contribution rule of a top-level metric path (``recall``, ``faithfulness.mean``)."""
    if metric in RULES:
        return RULES[metric]
    head, _, tail = metric.rpartition(".")
    if head and tail == "mean" and "." not in head:

        def mean_of(data: Mapping[str, Any], scores: Mapping[str, Any], status: str) -> Contribution | None:
            value = scores.get(head)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                return None
            return float(value), 1.0

        return mean_of
    return None


def contributor(task: Any, metric: str) -> Rule | None:
    """The function giving one case's contribution to ``metric``, resolved once per gate
    (35,000 cases x several gates x two runs make the per-call lookup add up)."""
    hook = getattr(task, "paired_contribution", None)
    rule = rule_for(metric)
    if hook is None:
        return rule

    def via_hook(data: Mapping[str, Any], scores: Mapping[str, Any], status: str) -> Contribution | None:
        got = hook(data, scores, status, metric)
        if got is not NotImplemented:
            return got
        return None if rule is None else rule(data, scores, status)

    return via_hook


def label_rule(task: Any, metric: str) -> LabelRule | None:
    """The label rule of ``metric`` when the task leaves it to the built-in rules."""
    return None if getattr(task, "paired_contribution", None) is not None else LABEL_RULES.get(metric)


def contribution(task: Any, metric: str, data: Mapping[str, Any], scores: Mapping[str, Any], status: str) -> Contribution | None:
    fn = contributor(task, metric)
    return None if fn is None else fn(data, scores, status)


def supported(task: Any, metric: str) -> bool:
    return getattr(task, "paired_contribution", None) is not None or rule_for(metric) is not None
