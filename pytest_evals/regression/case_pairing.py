"""Pair one suite's cases with the baseline's and run its regression gates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_evals.output.run_reader import RunCase
from pytest_evals.regression.contributions import contributor, label_rule, labels, positive_words
from pytest_evals.regression.drop_gates import RegressionGate, RegressionResult, judge
from pytest_evals.regression.paired_tests import compare_ratio
from pytest_evals.tasks.task_contract import Task

_SCORED = ("passed", "failed")


@dataclass
class SuiteComparison:
    """What changed in one suite against its baseline (the JSON ``baseline`` block)."""

    paired: int = 0
    unpaired_current: list[str] = field(default_factory=list)
    unpaired_baseline: list[str] = field(default_factory=list)
    #: Cases scored in one run and erroring in the other: not in any paired test.
    error_in_one: list[str] = field(default_factory=list)
    newly_failing: list[dict[str, Any]] = field(default_factory=list)
    newly_passing: list[dict[str, Any]] = field(default_factory=list)
    gates: list[RegressionResult] = field(default_factory=list)
    note: str | None = None

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "paired": self.paired,
            "unpaired_current": self.unpaired_current,
            "unpaired_baseline": self.unpaired_baseline,
            "error_in_one_run": self.error_in_one,
            "newly_failing": self.newly_failing,
            "newly_passing": self.newly_passing,
            "gates": [g.to_json() for g in self.gates],
        }
        if self.note:
            out["note"] = self.note
        return out


def compare_suite(
    task: Task[Any] | None,
    gates: Sequence[RegressionGate],
    results: Sequence[Any],
    baseline: Mapping[str, RunCase] | None,
    *,
    alpha: float,
    required: bool = False,
    tag: str = "",
) -> SuiteComparison:
    """Pair ``results`` (this run's CaseResults of one suite) with ``baseline`` by case id."""
    out = SuiteComparison()
    if baseline is None:
        reason = "no baseline for this suite" + (" (--evals-baseline-required)" if required else "")
        for g in gates:
            r = judge(g, None, alpha, reason)
            if required:
                r.status = "failed"
            out.gates.append(r)
        out.note = reason
        return out
    current = {r.case_id: r for r in results if r.case_id != "suite-error"}
    out.unpaired_current = sorted(set(current) - set(baseline))
    out.unpaired_baseline = sorted(set(baseline) - set(current))
    both = [cid for cid in sorted(current, key=lambda c: (current[c].index, c)) if cid in baseline]
    out.paired = len(both)
    for cid in both:
        cur, base = current[cid], baseline[cid]
        if (cur.status in _SCORED) != (base.status in _SCORED):
            out.error_in_one.append(cid)
        if base.status == "passed" and cur.status in ("failed", "error"):
            out.newly_failing.append({"case_id": cid, "baseline": base.status, "current": cur.status,
                                      "message": cur.message, "baseline_message": base.message})
        elif base.status in ("failed", "error") and cur.status == "passed":
            out.newly_passing.append({"case_id": cid, "baseline": base.status, "current": cur.status,
                                      "baseline_message": base.message})
    scored = [
        (current[cid], baseline[cid])
        for cid in both
        if current[cid].status in _SCORED and baseline[cid].status in _SCORED
    ]
    pair_labels: list[tuple[Any, Any]] | None = None
    for g in gates:
        fn = contributor(task, g.metric)
        by_labels = label_rule(task, g.metric)
        if by_labels is not None:
            if pair_labels is None:  # read once, shared by precision, recall, F-beta ...
                words = positive_words(task)
                pair_labels = [(labels(base.data, words), labels(cur.data, words)) for cur, base in scored]
            rows = [(*by_labels(*b), *by_labels(*c)) for b, c in pair_labels if b is not None and c is not None]
        elif fn is None:
            out.gates.append(
                RegressionResult(g, "failed", g.alpha or alpha, None,
                                 f"no paired test for {g.metric!r}: gate a top-level metric (accuracy, precision, "
                                 "recall, f1, f2, pass_rate) or a score's mean (e.g. faithfulness.mean)")
            )
            continue
        else:
            rows = []
            for cur, base in scored:
                c = fn(cur.data, cur.scores, cur.status)
                if c is None:
                    continue
                b = fn(base.data, base.scores, base.status)
                if b is not None:
                    rows.append((b[0], b[1], c[0], c[1]))
        arr = np.asarray(rows, dtype=np.float64).reshape(-1, 4)
        test = compare_ratio(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3],
                             lower_is_better=g.lower_is_better, tag=f"{tag}:{g.metric}")
        out.gates.append(judge(g, test, alpha))
    return out
