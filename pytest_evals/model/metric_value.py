"""Aggregate values: a metric value with its interval, or the reason it is undefined."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Union

from pytest_evals.model import value_format as formatting
from pytest_evals.stats import intervals as stats


@dataclass
class Metric:
    value: float | None
    ci: tuple[float, float] | None = None
    n: int | None = None
    #: Why ``value`` is None (e.g. "0/0: no predicted positives").
    reason: str | None = None
    #: "proportion" (k/n), "mean", "count", "score" (any other statistic, e.g. F1).
    kind: str = "proportion"

    @property
    def defined(self) -> bool:
        return self.value is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "kind": self.kind}
        if self.ci is not None:
            out["ci_low"], out["ci_high"] = self.ci
        if self.n is not None:
            out["n"] = self.n
        if self.reason is not None:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Metric:
        ci = (data["ci_low"], data["ci_high"]) if "ci_low" in data else None
        return cls(data.get("value"), ci, data.get("n"), data.get("reason"), data.get("kind", "proportion"))


#: Nested tree of metrics: {"precision": Metric, "per_guardrail": {"pii": {...}}}
MetricTree = dict[str, Union[Metric, "MetricTree"]]


def proportion(successes: int, total: int, undefined: str) -> Metric:
    """``successes/total`` with a Clopper-Pearson interval; undefined (with ``undefined`` as the reason) for 0/0."""
    if total == 0:
        return Metric(None, None, 0, f"0/0: {undefined}")
    return Metric(successes / total, stats.clopper_pearson(successes, total), total)


def count(value: int) -> Metric:
    return Metric(float(value), None, None, None, "count")


def mean_metric(
    values: list[float], *, empty: str = "no scored cases", bounds: tuple[float, float] | None = None
) -> Metric:
    """Mean with a 95% interval: inside ``bounds`` when the score has them, else Student t."""
    if not values:
        return Metric(None, None, 0, f"0/0: {empty}", "mean")
    ci = stats.bounded_mean_ci(values, *bounds) if bounds is not None else stats.mean_ci(values)
    return Metric(sum(values) / len(values), ci, len(values), None, "mean")


def score_summary(
    values: list[float], threshold: float | None = None, bounds: tuple[float, float] | None = None
) -> MetricTree:
    """mean / median / std / pass rate of per-case scores, as the RAG and HarpIA tasks report."""
    tree: MetricTree = {
        "mean": mean_metric(values, bounds=bounds),
        "median": Metric(stats.median(values), None, len(values), None if values else "0/0: no scored cases", "score"),
        "std": Metric(stats.std(values, ddof=1) if len(values) > 1 else None, None, len(values),
                      None if len(values) > 1 else "needs two or more scores", "score"),
    }
    if threshold is not None:
        passed = sum(1 for v in values if v >= threshold)
        tree["pass_rate"] = proportion(passed, len(values), "no scored cases")
    return tree


def _is_metric(node: Any) -> bool:
    return isinstance(node, Metric)


def walk(tree: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Metric]]:
    """Flatten a metric tree into (dotted path, Metric) pairs, in insertion order."""
    return formatting.walk(tree, prefix, _is_metric)


def tree_to_json(tree: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v.to_json() if isinstance(v, Metric) else tree_to_json(v)) for k, v in tree.items()}


def tree_from_json(data: Mapping[str, Any]) -> MetricTree:
    out: MetricTree = {}
    for k, v in data.items():
        if formatting.is_json_leaf(v):
            out[k] = Metric.from_json(v)
        elif isinstance(v, Mapping):
            out[k] = tree_from_json(v)
    return out
