"""Suite-level gates: ``thresholds`` in a suite file checked against its metric tree.

``thresholds: {precision: {min: 0.9}, faithfulness: {mean: {min: 0.8}}}``: walk the
mapping until a node holds ``min``/``max``; the keys on the way are the metric's dotted
path. A path may end in ``ci_low``/``ci_high`` to gate on an interval bound, and a bare
number is shorthand for ``min``. A gate on a metric that does not exist or is undefined
(0/0) fails, with the reason, rather than passing quietly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from pytest_evals.model import value_format as fmt
from pytest_evals.model.errors import SuiteConfigError
from pytest_evals.model.metric_value import Metric, walk

_BOUNDS = ("min", "max")
#: Keys of regression gates, checked against a baseline run instead of a value.
REGRESSION_KEYS = ("max_drop", "max_rise", "alpha")
_ATTRS = ("value", "ci_low", "ci_high")


@dataclass
class Gate:
    metric: str
    op: str  # "min" or "max"
    threshold: float


@dataclass
class GateResult:
    metric: str
    op: str
    threshold: float
    value: float | None
    passed: bool
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        required = f"{fmt.sign(self.op)} {fmt.threshold(self.threshold)}"
        text = f"{self.metric} = {fmt.gate_value(self.value)}, required {required}"
        return f"{text} ({self.reason})" if self.reason else text


def parse_thresholds(thresholds: Mapping[str, Any], where: str = "thresholds") -> list[Gate]:
    gates: list[Gate] = []

    def visit(node: Any, path: list[str]) -> None:
        dotted = ".".join(path)
        if isinstance(node, bool) or node is None:
            raise SuiteConfigError(f"{where}.{dotted}: expected a number or {{min/max: number}}")
        if isinstance(node, (int, float)):
            gates.append(Gate(dotted, "min", float(node)))
            return
        if not isinstance(node, Mapping):
            raise SuiteConfigError(f"{where}.{dotted}: expected a mapping, got {type(node).__name__}")
        for key, value in node.items():
            key = str(key)
            if key in REGRESSION_KEYS:
                continue  # max_drop / max_rise / alpha: regression gates (pytest_evals.regression)
            if key in _BOUNDS:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise SuiteConfigError(f"{where}.{dotted}.{key}: expected a number, got {value!r}")
                if not path:
                    raise SuiteConfigError(f"{where}.{key}: name the metric first, e.g. precision: {{{key}: 0.9}}")
                gates.append(Gate(dotted, key, float(value)))
            else:
                visit(value, [*path, key])

    visit(thresholds, [])
    return gates


def lookup(metrics: Mapping[str, Any], path: str) -> tuple[Metric | None, str]:
    """Find ``path`` in a metric tree; returns (metric, attribute to read)."""
    flat = dict(walk(metrics))
    if path in flat:
        return flat[path], "value"
    head, _, attr = path.rpartition(".")
    if attr in _ATTRS and head in flat:
        return flat[head], attr
    return None, "value"


def check(gates: list[Gate], metrics: Mapping[str, Any]) -> list[GateResult]:
    results = []
    available = [p for p, _ in walk(metrics)]
    for gate in gates:
        metric, attr = lookup(metrics, gate.metric)
        if metric is None:
            near = [p for p in available if p.endswith(gate.metric.split(".")[-1])][:5]
            hint = f"; did you mean {', '.join(near)}?" if near else f"; available: {', '.join(available[:12])}"
            results.append(GateResult(gate.metric, gate.op, gate.threshold, None, False, f"no such metric{hint}"))
            continue
        if attr == "value":
            value = metric.value
        elif metric.ci is None:
            value = None
        else:
            value = metric.ci[0] if attr == "ci_low" else metric.ci[1]
        if value is None:
            reason = metric.reason or "no confidence interval"
            results.append(GateResult(gate.metric, gate.op, gate.threshold, None, False, f"undefined: {reason}"))
            continue
        ok = value >= gate.threshold if gate.op == "min" else value <= gate.threshold
        results.append(GateResult(gate.metric, gate.op, gate.threshold, value, ok))
    return results
