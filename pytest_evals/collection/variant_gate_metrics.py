"""The metrics a suite's variant gates and ``compare_metrics`` name, checked at collection.

A ``better_than: {variant: mini, metric: acuracy}`` would otherwise run every case and
then say the gate had "no paired cases": a typo reported as a measurement. Each named
metric must be one the suite computes (a path of the task's metric tree, which its
``aggregate`` gives over no results) and one the paired tests have a rule for; else the
suite is one ERROR naming the file and the field, before any case runs.

A nested ``<group>.<metric>`` (HaluEval's ``qa.f1``) is a group of cases that only the
results make: it is accepted when the task computes ``overall.<metric>`` or
``<metric>``, the family groups comparisons by a field of its results, and (when the
cases' references carry that field, as HaluEval's ``task_type``) some case is in that
group.

The paired rules live in the regression layer, above collection: the variant plugin
puts its rule lookup on the config (:data:`PAIRED_RULE_KEY`) at configure time, so this
module needs no import from a later layer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.model.errors import SuiteConfigError

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_evals.tasks.task_contract import CaseRef, Task

#: ``(task, metric) -> True`` when a paired test has a rule for ``metric`` in ``task``'s results.
PAIRED_RULE_KEY = pytest.StashKey[Callable[["Task[Any]", str], bool]]()


def computed_metrics(task: Task[Any]) -> set[str] | None:
    """The metric paths ``task`` computes (counts included); None when its aggregation
    over no results says nothing (an empty tree or an exception): then nothing is claimed."""
    from pytest_evals.model.metric_value import walk

    try:
        tree, _tables = task.aggregate([])
        paths = {path for path, _metric in walk(tree)}
    except Exception:
        return None
    return paths or None


def _group_values(refs: Iterable[CaseRef], field: str) -> set[str] | None:
    """The values the cases' references carry in ``field`` (None: none carries it)."""
    seen = {str(ref.meta[field]) for ref in refs if field in ref.meta}
    return seen or None


def metric_problem(task: Task[Any], metric: str, refs: Callable[[], list[CaseRef]],
                   paired_rule: Callable[[Task[Any], str], bool] | None) -> str | None:
    """Why ``metric`` cannot be compared between variants of ``task`` (None: it can)."""
    known = computed_metrics(task)
    if known is not None and metric not in known:
        group, _, rest = metric.partition(".")
        from pytest_evals.registry.family_registry import group_field

        field = group_field(task.name)
        inner_known = bool(rest) and ({rest, f"overall.{rest}"} & known)
        values = _group_values(refs(), field) if field and inner_known else None
        if not (field and inner_known and (values is None or group in values)):
            listed = sorted(p for p in known if p != "cases" and not p.startswith("errors")
                            and (paired_rule is None or paired_rule(task, p)))
            extra = ""
            if field and inner_known and values is not None:
                extra = f"; its cases' {field} values: {', '.join(sorted(values))}"
            return (f"the {task.name} task computes no metric {metric!r} for this suite (metrics a paired test can "
                    f"compare: {_few(listed)}{extra})")
    if paired_rule is not None and not paired_rule(task, metric):
        return (f"{metric!r} has no paired test (the paired tests compare a top-level accuracy, pass_rate, "
                "precision, recall, specificity, f1, f2, a score's '.mean', a metric the task pairs itself, "
                "and those per group)")
    return None


def _few(paths: list[str], limit: int = 16) -> str:
    if not paths:
        return "none"
    return ", ".join(paths[:limit]) + (" ..." if len(paths) > limit else "")


def check_variant_metrics(config: pytest.Config, path: Path, named: Iterable[tuple[str, str, Task[Any]]],
                          refs: Callable[[], list[CaseRef]]) -> None:
    """Raise a SuiteConfigError naming the file and field of the first metric a variant
    gate or ``compare_metrics`` names that the suite cannot compare; ``named``: (field,
    metric, task of a variant that must compute it), ``refs``: the suite's cases."""
    paired_rule = config.stash.get(PAIRED_RULE_KEY, None)
    checked: set[tuple[int, str]] = set()
    for where, metric, t in named:
        if (id(t), metric) in checked:
            continue
        checked.add((id(t), metric))
        problem = metric_problem(t, metric, refs, paired_rule)
        if problem is not None:
            raise SuiteConfigError(f"{path}: {where} {metric!r}: {problem}")
