"""Regression gates: ``max_drop`` / ``max_rise`` next to a metric's ``min``/``max``.

``thresholds: {recall: {min: 0.9, max_drop: 0.02}, bias.mean: {max_rise: 0.05, alpha: 0.01}}``

A ``max_drop`` gate fails only when the metric fell by more than the margin against
the baseline AND the paired test says the fall is significant at ``alpha``: a drop that
judge noise on a few cases can explain passes, with its p-value shown. ``max_rise`` is
the same for metrics where lower is better. Without a baseline the gates are skipped
(``--evals-baseline-required`` fails them instead).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_evals.model.errors import SuiteConfigError

if TYPE_CHECKING:
    # paired_tests.py computes with numpy: loaded when a baseline is compared, not when the
    # plugin parses gates.
    from pytest_evals.regression.paired_tests import PairedTest

KEYS = ("max_drop", "max_rise", "alpha")
DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class RegressionGate:
    metric: str
    op: str  # "max_drop" or "max_rise"
    margin: float
    alpha: float | None = None

    @property
    def lower_is_better(self) -> bool:
        return self.op == "max_rise"


@dataclass
class RegressionResult:
    gate: RegressionGate
    status: str  # "passed", "failed", "skipped"
    alpha: float
    test: PairedTest | None = None
    reason: str | None = None

    @property
    def passed(self) -> bool:
        return self.status != "failed"

    def describe(self) -> str:
        g, t = self.gate, self.test
        head = f"{g.metric} {g.op.replace('_', ' ')} {g.margin:g} (alpha {self.alpha:g})"
        if t is None or t.diff is None:
            return f"{head}: {self.status}" + (f" ({self.reason})" if self.reason else "")
        ci = f" [{t.ci[0]:+.4f}, {t.ci[1]:+.4f}]" if t.ci else ""
        text = (
            f"{head}: {t.baseline:.4f} -> {t.current:.4f}, change {t.diff:+.4f}{ci}, "
            f"p = {t.p_value:.3g} ({t.method}, {t.n} paired cases) -> {self.status}"
        )
        return text + (f" ({self.reason})" if self.reason else "")

    def to_json(self) -> dict[str, Any]:
        t = self.test
        out: dict[str, Any] = {
            "metric": self.gate.metric,
            "op": self.gate.op,
            "margin": self.gate.margin,
            "alpha": self.alpha,
            "status": self.status,
            "passed": self.passed,
        }
        if t is not None:
            out.update(
                baseline=t.baseline, current=t.current, diff=t.diff,
                ci_low=t.ci[0] if t.ci else None, ci_high=t.ci[1] if t.ci else None,
                p_value=t.p_value, method=t.method, paired=t.n,
            )
            if t.worse is not None:
                out.update(worse=t.worse, better=t.better)
        if self.reason:
            out["reason"] = self.reason
        return out


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SuiteConfigError(f"{where}: expected a finite number, got {value!r}")
    return float(value)


def parse_regression_gates(thresholds: Mapping[str, Any], where: str = "thresholds") -> list[RegressionGate]:
    """Collect the ``max_drop``/``max_rise`` entries of a thresholds mapping."""
    gates: list[RegressionGate] = []

    def visit(node: Any, path: list[str]) -> None:
        if not isinstance(node, Mapping):
            return
        dotted = ".".join(path)
        alpha = None
        if "alpha" in node:
            alpha = _number(node["alpha"], f"{where}.{dotted}.alpha")
            if not 0 < alpha < 1:
                raise SuiteConfigError(f"{where}.{dotted}.alpha: must be between 0 and 1, got {alpha:g}")
        ops = [k for k in ("max_drop", "max_rise") if k in node]
        if alpha is not None and not ops:
            raise SuiteConfigError(f"{where}.{dotted}.alpha: goes with max_drop or max_rise")
        for op in ops:
            if not path:
                raise SuiteConfigError(f"{where}.{op}: name the metric first, e.g. recall: {{{op}: 0.02}}")
            margin = _number(node[op], f"{where}.{dotted}.{op}")
            if margin < 0:
                raise SuiteConfigError(f"{where}.{dotted}.{op}: a margin cannot be negative ({margin:g})")
            gates.append(RegressionGate(dotted, op, margin, alpha))
        for key, value in node.items():
            if str(key) not in KEYS and str(key) not in ("min", "max"):
                visit(value, [*path, str(key)])

    visit(thresholds, [])
    return gates


def judge(gate: RegressionGate, test: PairedTest | None, alpha: float, reason: str | None = None) -> RegressionResult:
    """Apply the rule: fail when the change is beyond the margin and significant."""
    a = gate.alpha if gate.alpha is not None else alpha
    if test is None:
        return RegressionResult(gate, "skipped", a, None, reason)
    if test.diff is None or test.p_value is None:
        return RegressionResult(gate, "failed", a, test, test.reason or reason or "no paired test")
    worse_by = test.diff if gate.lower_is_better else -test.diff
    if worse_by > gate.margin and test.p_value < a:
        return RegressionResult(gate, "failed", a, test)
    note = None
    if worse_by > gate.margin:
        note = f"beyond the margin but not significant at alpha {a:g}"
    return RegressionResult(gate, "passed", a, test, note)
