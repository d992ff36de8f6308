"""Pair one suite's cases with the baseline's and run its regression gates.

Cases pair by id, and only when both runs saw the same input: each result carries its
input's fingerprint (:mod:`pytest_evals.tasks.input_fingerprint`), and paired ids whose
fingerprints differ are different cases under one name (a ``line-N`` id of other data,
a relabelled case). They fail every regression gate, as a baseline recorded with other
settings (model, target) does, unless ``--evals-baseline-allow-changes``: then changed
cases are left out of the paired tests and counted, and other settings are noted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_evals.output.run_reader import RunCase
from pytest_evals.regression.contributions import contributor, label_rule, labels, positive_words
from pytest_evals.regression.drop_gates import (
    Coverage,
    RegressionGate,
    RegressionResult,
    WholeRuns,
    judge,
)
from pytest_evals.regression.paired_tests import compare_ratio
from pytest_evals.regression.recorded_settings import shown_changes
from pytest_evals.tasks.task_contract import Task

_SCORED = ("passed", "failed")
#: Case ids named in a message before "and N more" (all are in the JSON).
SHOWN_IDS = 5


def shown(ids: Sequence[str], limit: int = SHOWN_IDS) -> str:
    """``a, b, c and 7 more``."""
    text = ", ".join(ids[:limit])
    return text + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


@dataclass
class SuiteComparison:
    """What changed in one suite against its baseline (the JSON ``baseline`` block)."""

    paired: int = 0
    unpaired_current: list[str] = field(default_factory=list)
    unpaired_baseline: list[str] = field(default_factory=list)
    #: Cases scored in one run and erroring in the other: not in any paired test.
    error_in_one: list[str] = field(default_factory=list)
    #: Paired ids whose input fingerprints differ: not the same case.
    changed_inputs: list[str] = field(default_factory=list)
    #: Paired ids where either run recorded no fingerprint (inputs not checked).
    unchecked_inputs: int = 0
    #: The suite's recorded settings that differ from the baseline's ("llm.model: a -> b").
    settings_changes: list[str] = field(default_factory=list)
    #: Why the settings could not be checked (the baseline records none), if so.
    settings_note: str | None = None
    #: Changes were accepted (--evals-baseline-allow-changes).
    changes_allowed: bool = False
    newly_failing: list[dict[str, Any]] = field(default_factory=list)
    newly_passing: list[dict[str, Any]] = field(default_factory=list)
    gates: list[RegressionResult] = field(default_factory=list)
    note: str | None = None
    #: Cases of this run (the suite's population the gates speak of).
    cases: int = 0

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)

    @property
    def inconclusive(self) -> list[RegressionResult]:
        return [g for g in self.gates if g.verdict == "inconclusive"]

    def mismatch(self) -> str | None:
        """Why this baseline is not a baseline of this suite as it ran, or None."""
        parts = []
        if self.changed_inputs:
            parts.append(
                f"{len(self.changed_inputs)} of {self.paired + len(self.changed_inputs)} paired case ids have other "
                f"inputs in the baseline ({shown(self.changed_inputs)})"
            )
        if self.settings_changes:
            parts.append(f"the baseline ran with other settings ({shown_changes(self.settings_changes)})")
        return "; ".join(parts) or None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cases": self.cases,
            "paired": self.paired,
            "unpaired_current": self.unpaired_current,
            "unpaired_baseline": self.unpaired_baseline,
            "error_in_one_run": self.error_in_one,
            "changed_inputs": self.changed_inputs,
            "unchecked_inputs": self.unchecked_inputs,
            "settings_changes": self.settings_changes,
            "changes_allowed": self.changes_allowed,
            "newly_failing": self.newly_failing,
            "newly_passing": self.newly_passing,
            "gates": [g.to_json() for g in self.gates],
            "inconclusive": [g.gate.metric for g in self.inconclusive],
        }
        if self.settings_note:
            out["settings_note"] = self.settings_note
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
    settings_changes: Sequence[str] = (),
    settings_note: str | None = None,
    allow_changes: bool = False,
    fail_inconclusive: bool = False,
) -> SuiteComparison:
    """Pair ``results`` (this run's CaseResults of one suite) with ``baseline`` by case id
    and input; ``settings_changes``: how the suite's recorded settings differ from the
    baseline's."""
    out = SuiteComparison(settings_changes=list(settings_changes), settings_note=settings_note,
                          changes_allowed=allow_changes)
    current = {r.case_id: r for r in results if r.case_id != "suite-error"}
    out.cases = len(current)
    if baseline is None:
        reason = "no baseline for this suite" + (" (--evals-baseline-required)" if required else "")
        for g in gates:
            r = judge(g, None, alpha, reason)
            if required:
                r.status = "failed"
            out.gates.append(r)
        out.note = reason
        return out
    out.unpaired_current = sorted(set(current) - set(baseline))
    out.unpaired_baseline = sorted(set(baseline) - set(current))
    both: list[str] = []
    for cid in sorted(current, key=lambda c: (current[c].index, c)):
        base = baseline.get(cid)
        if base is None:
            continue
        mine = current[cid].fingerprint
        if mine is None or base.fingerprint is None:
            out.unchecked_inputs += 1
        elif mine != base.fingerprint:
            out.changed_inputs.append(cid)
            continue
        both.append(cid)
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
    coverage = Coverage(cases=out.cases, paired=out.paired, new=len(out.unpaired_current),
                        vanished=len(out.unpaired_baseline), changed=len(out.changed_inputs))
    paired_ids = set(both)
    scored = [
        (current[cid], baseline[cid])
        for cid in both
        if current[cid].status in _SCORED and baseline[cid].status in _SCORED
    ]
    # Unpaired cases (new, vanished, changed inputs) with a say in a metric may move the
    # suite's value where the paired test cannot see: the whole runs are compared too.
    unpaired = len(current) + len(baseline) > 2 * len(paired_ids)
    cur_all = [r for r in current.values() if r.status in _SCORED]
    base_all = [c for c in baseline.values() if c.status in _SCORED]
    blocked = None if allow_changes else out.mismatch()
    pair_labels: list[tuple[Any, Any]] | None = None
    words = positive_words(task)
    for g in gates:
        fn = contributor(task, g.metric)
        by_labels = label_rule(task, g.metric)
        if by_labels is not None:
            if pair_labels is None:  # read once, shared by precision, recall, F-beta ...
                pair_labels = [(labels(base.data, words), labels(cur.data, words)) for cur, base in scored]
            rows = [(*by_labels(*b), *by_labels(*c)) for b, c in pair_labels if b is not None and c is not None]
        elif fn is None:
            out.gates.append(
                RegressionResult(g, "failed", g.alpha or alpha, None,
                                 f"no paired test for {g.metric!r}: gate a top-level metric (accuracy, precision, "
                                 "recall, f1, f2, pass_rate) or a score's mean (e.g. faithfulness.mean)",
                                 coverage=coverage)
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
        whole = _whole_runs(task, g.metric, cur_all, base_all, paired_ids, words) if unpaired else None
        result = judge(g, test, alpha, whole=whole, fail_inconclusive=fail_inconclusive)
        result.coverage = coverage
        if blocked is not None:
            result.status, result.verdict = "failed", None
            result.reason = "not checked: the baseline does not match this run (see changed inputs and settings)"
        out.gates.append(result)
    return out


def _contribution(task: Task[Any] | None, metric: str, case: Any, words: frozenset[str]) -> tuple[float, float] | None:
    """One unpaired case's (num, den) in ``metric``, by the rule the paired test uses."""
    by_labels = label_rule(task, metric)
    if by_labels is not None:
        pair = labels(case.data, words)
        return None if pair is None else by_labels(*pair)
    fn = contributor(task, metric)
    return None if fn is None else fn(case.data, case.scores, case.status)


def _ratio(parts: Sequence[tuple[float, float]]) -> float | None:
    den = sum(d for _, d in parts)
    return sum(n for n, _ in parts) / den if den > 0 else None


def _whole_runs(
    task: Task[Any] | None, metric: str, current: Sequence[Any], baseline: Sequence[Any],
    paired: set[str], words: frozenset[str],
) -> WholeRuns | None:
    """``metric`` over all the scored cases of each run, and how many unpaired cases have
    a say in it; None when none has."""
    cur: list[tuple[float, float]] = []
    base: list[tuple[float, float]] = []
    new = vanished = 0
    for cases, parts, is_current in ((current, cur, True), (baseline, base, False)):
        for case in cases:
            got = _contribution(task, metric, case, words)
            if got is None:
                continue
            parts.append(got)
            if case.case_id not in paired:
                if is_current:
                    new += 1
                else:
                    vanished += 1
    if not (new or vanished):
        return None
    return WholeRuns(_ratio(base), _ratio(cur), new, vanished)


def metric_over(task: Task[Any] | None, metric: str, results: Sequence[Any]) -> float | None:
    """``metric`` by the paired test's rule over ``results`` (the cases a task aggregates:
    scored ones, and erroring ones that still carry data); None without a rule or a
    defined value. The suite's own value must equal it, else the gate tests another
    quantity than the suite reports."""
    if label_rule(task, metric) is None and contributor(task, metric) is None:
        return None
    words = positive_words(task)
    parts = [
        c for c in (
            _contribution(task, metric, r, words)
            for r in results
            if r.case_id != "suite-error" and (r.status in _SCORED or (r.status == "error" and r.data))
        )
        if c is not None
    ]
    return _ratio(parts)
