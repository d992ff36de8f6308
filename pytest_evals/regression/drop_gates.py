"""Regression gates: ``max_drop`` / ``max_rise`` next to a metric's ``min``/``max``.

``thresholds: {recall: {min: 0.9, max_drop: 0.02}, bias.mean: {max_rise: 0.05, alpha: 0.01}}``

Each gate says one of three things about the paired cases, from the paired test's
one-sided p-value for "worse" and the 95% interval of the change (``worse by`` is the
drop for ``max_drop``, the rise for ``max_rise``; ``margin`` the gate's value):

* **regression** (fails the suite): the observed change is worse than the margin AND
  significant (p < alpha). A true change equal to the margin is flagged about half the
  time, whatever the number of cases (``pytest-evals power`` gives the figures);
* **no regression**: the interval excludes every change worse than the margin (its
  worse end is within the margin) and, when cases are new or vanished, the suite's
  metric over all the cases of each run is not worse than the margin either;
* **inconclusive** otherwise: too few cases to tell (a wide interval), a change beyond
  the margin that is not significant, or unpaired cases that may hide a regression.
  It passes by default, shown as such everywhere, and fails with
  ``--evals-fail-inconclusive``.

Without a baseline the gates are skipped (``--evals-baseline-required`` fails them).
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


REGRESSION = "regression"
NO_REGRESSION = "no regression"
INCONCLUSIVE = "inconclusive"
#: Float noise allowed when a change is compared with the margin: a change of exactly
#: the margin, computed as a difference of two ratios, is not beyond it.
TOLERANCE = 1e-9


def beyond_margin(worse_by: float, margin: float) -> bool:
    """Whether a change worse by ``worse_by`` is worse than the margin (the one rule the
    gate and ``pytest-evals power`` share)."""
    return worse_by - margin > TOLERANCE


@dataclass(frozen=True)
class Coverage:
    """Which of the suite's cases a gate's paired test speaks for."""

    #: Cases of this run (the suite's population) and cases paired with the baseline.
    cases: int = 0
    paired: int = 0
    #: Cases only in this run, only in the baseline, and paired ids whose inputs differ
    #: (left out of the tests under ``--evals-baseline-allow-changes``).
    new: int = 0
    vanished: int = 0
    changed: int = 0

    def describe(self) -> str:
        """"" when every case is paired, else e.g. "50 of 100 cases paired: 50 new"."""
        if not (self.new or self.vanished or self.changed) and self.paired == self.cases:
            return ""
        parts = [f"{n} {what}" for n, what in ((self.new, "new"), (self.vanished, "vanished"),
                                                 (self.changed, "with changed inputs")) if n]
        return f"{self.paired} of {self.cases} cases paired" + (": " + ", ".join(parts) if parts else "")


@dataclass(frozen=True)
class WholeRuns:
    """The gated metric over all the cases of each run, when cases are unpaired."""

    baseline: float | None
    current: float | None
    #: Unpaired cases with a say in the metric: only in this run, only in the baseline.
    new: int
    vanished: int


@dataclass
class RegressionResult:
    gate: RegressionGate
    #: "failed" (fails the suite), "passed", "inconclusive" (passes unless
    #: --evals-fail-inconclusive, then "failed") or "skipped" (no baseline).
    status: str
    alpha: float
    test: PairedTest | None = None
    reason: str | None = None
    #: regression / no regression / inconclusive; None when the gate was not decided
    #: (skipped, or no paired case defines the metric).
    verdict: str | None = None
    coverage: Coverage | None = None
    whole: WholeRuns | None = None

    @property
    def passed(self) -> bool:
        return self.status != "failed"

    def describe(self) -> str:
        g, t = self.gate, self.test
        head = f"{g.metric} {g.op.replace('_', ' ')} {g.margin:g} (alpha {self.alpha:g})"
        covered = self.coverage.describe() if self.coverage is not None else ""
        if t is None or t.diff is None:
            text = f"{head}: {self.verdict or self.status}"
            return text + (f" ({self.reason})" if self.reason else "") + (f" [{covered}]" if covered else "")
        ci = f" [{t.ci[0]:+.4f}, {t.ci[1]:+.4f}]" if t.ci else ""
        cases = f"{t.n} paired cases" + (f"; {covered}" if covered else "")
        text = (
            f"{head}: {t.baseline:.4f} -> {t.current:.4f}, change {t.diff:+.4f}{ci}, "
            f"p = {t.p_value:.3g} ({t.method}, {cases}) -> {self.verdict or self.status}"
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
            "verdict": self.verdict,
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
        if self.coverage is not None:
            c = self.coverage
            out["cases"] = {"current": c.cases, "paired": c.paired, "new": c.new, "vanished": c.vanished,
                            "changed_inputs": c.changed}
        if self.whole is not None:
            w = self.whole
            out["all_cases"] = {"baseline": w.baseline, "current": w.current, "new": w.new, "vanished": w.vanished}
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


def judge(
    gate: RegressionGate,
    test: PairedTest | None,
    alpha: float,
    reason: str | None = None,
    *,
    whole: WholeRuns | None = None,
    fail_inconclusive: bool = False,
) -> RegressionResult:
    """The gate's verdict on ``test`` (the rule is in the module docstring); ``whole``:
    the metric over all the cases of each run when some are unpaired."""
    a = gate.alpha if gate.alpha is not None else alpha
    if test is None:
        return RegressionResult(gate, "skipped", a, None, reason)
    if test.diff is None or test.p_value is None:
        return RegressionResult(gate, "failed", a, test, test.reason or reason or "no paired test")
    sign = 1.0 if gate.lower_is_better else -1.0
    worse_by = sign * test.diff
    # The interval of "worse by": the change's interval, turned round for max_drop.
    worst = None if test.ci is None else max(sign * test.ci[0], sign * test.ci[1])
    significant = test.p_value < a
    if significant and beyond_margin(worse_by, gate.margin):
        return RegressionResult(gate, "failed", a, test, whole=whole, verdict=REGRESSION)
    notes = []
    if beyond_margin(worse_by, gate.margin):
        notes.append(f"worse than the margin but not significant at alpha {a:g}")
    elif worst is None:
        notes.append("no interval for the change")
    elif beyond_margin(worst, gate.margin):
        notes.append(f"the interval allows a change worse by {worst:.4f}, beyond the margin {gate.margin:g}")
    if whole is not None and whole.baseline is not None and whole.current is not None:
        whole_worse = sign * (whole.current - whole.baseline)
        if beyond_margin(whole_worse, gate.margin):
            notes.append(
                f"over all the cases of each run ({whole.new} only in this run, {whole.vanished} only in the "
                f"baseline) the metric went {whole.baseline:.4f} -> {whole.current:.4f}, beyond the margin: "
                "the paired cases say nothing about the unpaired ones"
            )
    if not notes:
        return RegressionResult(gate, "passed", a, test, whole=whole, verdict=NO_REGRESSION)
    status = "failed" if fail_inconclusive else "inconclusive"
    text = "; ".join(notes) + (" (--evals-fail-inconclusive)" if fail_inconclusive else "")
    return RegressionResult(gate, status, a, test, text, whole=whole, verdict=INCONCLUSIVE)
