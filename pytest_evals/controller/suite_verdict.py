"""Suite summaries: case counts, aggregates, gates and each suite's verdict, typed.

:class:`SuiteSummary` is what the controller keeps per suite (live metric tree, gate
results, the :class:`Reason` s it fails); :meth:`SuiteSummary.to_json` is its entry in
the JSON summary (schema in README.md). The terminal table, the files and the HTML
report read the same object. Plugins add their own reasons and JSON sections through
the ``pytest_evals_suite_verdict`` hook.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import ErrorKind, SuiteConfigError
from pytest_evals.model.gate import GateResult, check, parse_thresholds
from pytest_evals.model.metric_value import MetricTree, count, tree_to_json

if TYPE_CHECKING:
    from pytest_evals.suites.suite_config import Suite
    from pytest_evals.tasks.task_contract import Task

SCHEMA_VERSION = 1
SUITE_ERROR_ID = "suite-error"
#: ``error_kind`` of a collected case whose result never arrived (worker crash, interrupt).
MISSING_KIND = ErrorKind.INFRASTRUCTURE
#: How the message of such a result starts (it names the case's node id).
MISSING_PREFIX = "no result received for "


def is_missing(result: CaseResult) -> bool:
    """The stand-in result of a collected case that never reported."""
    return result.error_kind == MISSING_KIND and (result.message or "").startswith(MISSING_PREFIX)


class ReasonKind(enum.Enum):
    """Why a suite fails, by kind: what a reader of the verdict tells apart."""

    #: A gate's metric misses its threshold (``thresholds`` of the suite file).
    MISSED_GATE = "missed gate"
    #: Something wrong with the suite as a whole (unreadable input, malformed
    #: thresholds, an aggregation error, cases that never reported).
    PROBLEM = "problem"
    #: Failed or erroring cases the suite's gates do not cover.
    FAILED_CASES = "failed cases"
    #: A regression gate (``max_drop``/``max_rise``): worse than the baseline run.
    REGRESSION = "regression"
    #: Gates that could not be checked at all (e.g. regression gates without a readable baseline).
    UNCHECKED_GATES = "unchecked gates"
    #: A regression gate that cannot tell regression from none (fails only under
    #: ``--evals-fail-inconclusive``).
    INCONCLUSIVE = "inconclusive"


#: How each kind's line starts in the JSON summary's ``reasons`` (the schema's wording).
_JSON_PREFIX = {ReasonKind.MISSED_GATE: "missed gate: ", ReasonKind.REGRESSION: "regression: ",
                ReasonKind.INCONCLUSIVE: "inconclusive: "}


@dataclass(frozen=True)
class Reason:
    """One reason a suite fails: its kind and what it says (without the kind's words)."""

    kind: ReasonKind
    text: str

    def __str__(self) -> str:
        """The line of the JSON summary's ``reasons``, e.g. ``missed gate: recall = 0.5, required >= 0.9``."""
        return _JSON_PREFIX.get(self.kind, "") + self.text


@dataclass
class CaseCounts:
    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    #: Cases collected for the suite, and results that arrived for them (None: unknown,
    #: e.g. a suite recomputed from files).
    expected: int | None = None
    received: int | None = None

    @classmethod
    def of(cls, results: list[CaseResult]) -> CaseCounts:
        statuses = Counter(r.status for r in results)
        kinds = Counter(str(r.error_kind or ErrorKind.EXCEPTION) for r in results if r.status == "error")
        return cls(
            total=len(results),
            passed=statuses.get("passed", 0),
            failed=statuses.get("failed", 0),
            errors=statuses.get("error", 0),
            skipped=statuses.get("skipped", 0),
            errors_by_kind=dict(sorted(kinds.items())),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "total": self.total,
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "skipped": self.skipped,
            "errors_by_kind": dict(self.errors_by_kind),
        }
        if self.expected is not None:
            out["expected"], out["received"] = self.expected, self.received
        return out


@dataclass
class SuiteSummary:
    suite: str
    name: str
    task: str | None
    what: str
    generate: bool
    config: dict[str, Any] | None
    cases: CaseCounts
    metrics: MetricTree
    tables: dict[str, Any]
    gates: list[GateResult]
    #: Something wrong with the suite as a whole (fails it; each is also a PROBLEM reason).
    problems: list[str]
    #: Why the suite fails, in order; none when it passes.
    reasons: list[Reason]
    #: Things a reviewer should know that do not fail the suite (from the task's
    #: :meth:`~pytest_evals.tasks.task_contract.Task.suite_warnings`, e.g. unparseable replies).
    warnings: list[str] = field(default_factory=list)
    generated_path: str | None = None
    #: JSON sections plugins add to the suite's entry (after the core's keys), through
    #: ``pytest_evals_suite_verdict``: the regression plugin's ``case_results`` (what a
    #: later run pairs with) and ``baseline`` (the comparison). The schema names each.
    sections: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """The verdict: a suite passes when nothing gives a reason to fail it."""
        return not self.reasons

    def add_problem(self, text: str) -> None:
        """Something wrong with the suite as a whole: a problem, and a reason it fails."""
        self.problems.append(text)
        self.reasons.append(Reason(ReasonKind.PROBLEM, text))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "suite": self.suite,
            "name": self.name,
            "task": self.task,
            "what": self.what,
            "generate": self.generate,
            "config": self.config,
            "cases": self.cases.to_json(),
            "metrics": tree_to_json(self.metrics),
            "tables": self.tables,
            "gates": [g.to_json() for g in self.gates],
            "problems": list(self.problems),
            "warnings": list(self.warnings),
            "passed": self.passed,
            "reasons": [str(r) for r in self.reasons],
        }
        if self.generated_path is not None:
            out["generated_path"] = self.generated_path
        out.update(self.sections)
        return out


def errors_tolerated(counts: CaseCounts, gate_metrics: list[str]) -> bool:
    """Erroring cases are acceptable only where a gate says how many: a gate on ``errors``
    covers every kind, a gate on ``errors_<kind>`` covers that kind."""
    if not counts.errors:
        return True
    tops = {m.split(".")[0] for m in gate_metrics}
    if "errors" in tops:
        return True
    return all(f"errors_{kind}" in tops for kind in counts.errors_by_kind)


def verdict(counts: CaseCounts, gates: list[GateResult], problems: list[str], strict: bool) -> list[Reason]:
    """Why the suite fails (none: it passes). A suite passes when its gates pass, nothing
    is wrong with it as a whole, and its failed/erroring cases are covered: by its gates
    (errors by an errors gate), or, for a suite without gates, by there being none (then
    it behaves like plain tests)."""
    reasons = [Reason(ReasonKind.MISSED_GATE, g.describe()) for g in gates if not g.passed]
    reasons += [Reason(ReasonKind.PROBLEM, p) for p in problems]
    cases: list[str] = []
    if gates:
        if not errors_tolerated(counts, [g.metric for g in gates]):
            cases.append(f"{counts.errors} erroring case(s) and no gate on errors")
        if strict and counts.failed:
            cases.append(f"{counts.failed} failed case(s) (--evals-strict)")
    elif counts.failed or counts.errors:
        cases.append(f"{counts.failed} failed and {counts.errors} erroring case(s); the suite has no gates")
    return reasons + [Reason(ReasonKind.FAILED_CASES, text) for text in cases]


def missing_problem(missing: list[str], expected: int) -> str:
    """The suite-level problem of collected cases that never reported (never tolerated)."""
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return (
        f"{len(missing)} of {expected} collected case(s) returned no result "
        f"(worker crash or interrupted run): {shown}"
    )


def suite_summary(
    suite: Suite,
    task: Task[Any],
    results: list[CaseResult],
    strict: bool = False,
    accounted: bool = False,
) -> SuiteSummary:
    """``accounted``: ``results`` hold one entry per collected case, the ones that never
    reported as stand-ins (:func:`is_missing`); then the counts show expected vs received,
    and any missing case fails the suite, whatever its gates say."""
    counts = CaseCounts.of(results)
    missing = [f"{r.suite}::{r.case_id}" for r in results if is_missing(r)]
    if accounted:
        counts.expected, counts.received = counts.total, counts.total - len(missing)
    # An erroring case may still carry the metrics that did score (a RAG case whose
    # faithfulness judge failed still has its relevance): those feed the aggregates.
    scored = [r for r in results if r.status in ("passed", "failed") or (r.status == "error" and r.data)]
    problems: list[str] = []
    warnings: list[str] = []
    try:
        metrics, tables = task.aggregate(scored)
        warnings.extend(task.suite_warnings(scored, metrics))
    except Exception as exc:  # an aggregation bug must not hide the other suites
        metrics, tables = {}, {}
        from pytest_evals.registry.missing_extras import describe

        problems.append(f"aggregation failed: {describe(exc)}")
    errors_tree: MetricTree = {"errors": count(counts.errors)}
    for kind, n in counts.errors_by_kind.items():
        errors_tree[f"errors_{kind}"] = count(n)
    metrics = {**metrics, **errors_tree, "cases": count(counts.total)}
    gates: list[GateResult] = []
    try:
        parsed = parse_thresholds(suite.config.thresholds)
        # An error kind that did not occur is a count of 0, not a missing metric.
        for gate in parsed:
            top = gate.metric.split(".")[0]
            if top.startswith("errors_") and top not in metrics:
                metrics[top] = count(0)
        gates = check(parsed, metrics)
    except SuiteConfigError as exc:
        problems.append(str(exc))
    problems.extend(r.message for r in results if r.case_id == SUITE_ERROR_ID and r.message)
    if missing:
        problems.append(missing_problem(missing, counts.total))
    return SuiteSummary(
        suite=suite.nodeid,
        name=suite.name,
        task=suite.config.task,
        what=suite.config.what,
        generate=suite.config.generate,
        config=suite.config.model_dump(mode="json", exclude_defaults=False),
        cases=counts,
        metrics=metrics,
        tables=tables,
        gates=gates,
        problems=problems,
        reasons=verdict(counts, gates, problems, strict),
        warnings=warnings,
    )


def suite_error_summary(suite_id: str, message: str, results: list[CaseResult]) -> SuiteSummary:
    return SuiteSummary(
        suite=suite_id,
        name=Path(suite_id).name,
        task=None,
        what="",
        generate=False,
        config=None,
        cases=CaseCounts.of(results),
        metrics={},
        tables={},
        gates=[],
        problems=[message],
        reasons=[Reason(ReasonKind.PROBLEM, message)],
    )
