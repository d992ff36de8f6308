"""Suite summaries: case counts, aggregates, gates and each suite's verdict, typed.

:class:`SuiteSummary` is what the controller keeps per suite (live metric tree and gate
results); :meth:`SuiteSummary.to_json` is its entry in the JSON summary (schema in
README.md). The terminal table, the files and the HTML report read the same object.
"""

from __future__ import annotations

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
    #: Something wrong with the suite as a whole (fails it).
    problems: list[str]
    passed: bool
    reasons: list[str]
    #: Things a reviewer should know that do not fail the suite (from the task's
    #: :meth:`~pytest_evals.tasks.task_contract.Task.suite_warnings`, e.g. unparseable replies).
    warnings: list[str] = field(default_factory=list)
    generated_path: str | None = None
    #: Per case what a later run's ``--evals-baseline`` pairs with (case_id, status, scores, data).
    case_results: list[dict[str, Any]] | None = None
    #: The comparison with ``--evals-baseline`` (paired tests, flipped cases), as JSON.
    baseline: dict[str, Any] | None = None
    #: The same comparison as objects, for the terminal (not written).
    regressions: Any = None

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
            "reasons": list(self.reasons),
        }
        if self.generated_path is not None:
            out["generated_path"] = self.generated_path
        if self.case_results is not None:
            out["case_results"] = self.case_results
        if self.baseline is not None:
            out["baseline"] = self.baseline
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


def verdict(counts: CaseCounts, gates: list[GateResult], problems: list[str], strict: bool) -> tuple[bool, list[str]]:
    """A suite passes when its gates pass, nothing is wrong with it as a whole, and its
    failed/erroring cases are covered: by its gates (errors by an errors gate), or, for a
    suite without gates, by there being none (then it behaves like plain tests)."""
    reasons = [f"missed gate: {g.describe()}" for g in gates if not g.passed]
    reasons += problems
    if gates:
        if not errors_tolerated(counts, [g.metric for g in gates]):
            reasons.append(f"{counts.errors} erroring case(s) and no gate on errors")
        if strict and counts.failed:
            reasons.append(f"{counts.failed} failed case(s) (--evals-strict)")
    elif counts.failed or counts.errors:
        reasons.append(f"{counts.failed} failed and {counts.errors} erroring case(s); the suite has no gates")
    return not reasons, reasons


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
    passed, reasons = verdict(counts, gates, problems, strict)
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
        passed=passed,
        reasons=reasons,
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
        passed=False,
        reasons=[message],
    )
