"""Per-case contributions to a metric, so that metric = sum(num) / sum(den).

The regression tests need, for one gated metric, what each case adds to it. The rules
below read the plain data label tasks put on their results (``expected`` and
``actual``/``predicted`` labels, ``scores``, ``status``); a task declares the words its
labels use for the positive class (``Task.positive_labels``) and can take over any
metric with ``Task.paired_contribution`` (a third-party family needs no core change).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_evals.tasks.task_contract import Contribution, Task

#: (data, scores, status) -> (num, den) for one case, None when the case has no say.
Rule = Callable[[Mapping[str, Any], Mapping[str, Any], str], "Contribution | None"]
#: A task's own rule: (data, scores, status, metric) -> (num, den), None or NotImplemented.
Hook = Callable[[Mapping[str, Any], Mapping[str, Any], str, str], "Contribution | None"]

#: Label text every task's labels may use for the positive class.
POSITIVE = frozenset({"yes", "true", "1"})


def positive_words(task: Task[Any] | None) -> frozenset[str]:
    """The label words that mean positive in ``task``'s results."""
    if task is None or not task.positive_labels:
        return POSITIVE
    return POSITIVE | {word.lower() for word in task.positive_labels}


def _label(value: Any, positive: frozenset[str]) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    if isinstance(value, str):
        return value.strip().lower() in positive
    return None


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


def labels(data: Mapping[str, Any], positive: frozenset[str] = POSITIVE) -> tuple[bool, bool | None] | None:
    """A case's (expected, predicted) labels, None when it has no binary label;
    predicted None = no answer. ``positive``: the words that mean the positive class."""
    if "expected" not in data:
        return None
    expected = _label(data["expected"], positive)
    if expected is None:
        return None
    raw = data.get("actual", data.get("predicted"))
    return expected, (None if raw is None else _label(raw, positive))


def _from_labels(rule: LabelRule, positive: frozenset[str]) -> Rule:
    def per_case(data: Mapping[str, Any], scores: Mapping[str, Any], status: str) -> Contribution | None:
        pair = labels(data, positive)
        return None if pair is None else rule(*pair)

    return per_case


def _accuracy(data: Mapping[str, Any], scores: Mapping[str, Any], status: str) -> Contribution | None:
    if status not in ("passed", "failed"):
        return None
    if "correct" in scores and isinstance(scores["correct"], (int, float)):
        return float(scores["correct"] >= 0.5), 1.0
    return float(status == "passed"), 1.0


#: Rules that read no label: the case's status or its ``correct`` score.
STATUS_RULES: dict[str, Rule] = {"accuracy": _accuracy, "pass_rate": _accuracy}


def rule_for(metric: str, positive: frozenset[str] = POSITIVE) -> Rule | None:
    """The built-in contribution rule of a top-level metric path (``recall``,
    ``faithfulness.mean``), labels read with the ``positive`` words."""
    if metric in STATUS_RULES:
        return STATUS_RULES[metric]
    if metric in LABEL_RULES:
        return _from_labels(LABEL_RULES[metric], positive)
    head, _, tail = metric.rpartition(".")
    if head and tail == "mean" and "." not in head:

        def mean_of(data: Mapping[str, Any], scores: Mapping[str, Any], status: str) -> Contribution | None:
            value = scores.get(head)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                return None
            return float(value), 1.0

        return mean_of
    return None


def own_rule(task: Task[Any] | None) -> Hook | None:
    """The task's own ``paired_contribution``; None when it keeps the contract's
    default (every metric left to the built-in rules)."""
    if task is None or type(task).paired_contribution is Task.paired_contribution:
        return None
    return task.paired_contribution


def contributor(task: Task[Any] | None, metric: str) -> Rule | None:
    """The function giving one case's contribution to ``metric``, resolved once per gate
    (35,000 cases x several gates x two runs make the per-call lookup add up)."""
    rule = rule_for(metric, positive_words(task))
    hook = own_rule(task)
    if hook is None:
        return rule

    def via_hook(data: Mapping[str, Any], scores: Mapping[str, Any], status: str) -> Contribution | None:
        got = hook(data, scores, status, metric)
        if got is not NotImplemented:
            return got
        return None if rule is None else rule(data, scores, status)

    return via_hook


def label_rule(task: Task[Any] | None, metric: str) -> LabelRule | None:
    """The label rule of ``metric`` when the task leaves it to the built-in rules."""
    return None if own_rule(task) is not None else LABEL_RULES.get(metric)
