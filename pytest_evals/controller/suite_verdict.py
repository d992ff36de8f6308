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

from pytest_evals.model import value_format as fmt
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import ErrorKind, SuiteConfigError
from pytest_evals.model.gate import GateResult, check, parse_thresholds
from pytest_evals.model.metric_value import MetricTree, count, tree_to_json, walk

if TYPE_CHECKING:
    from pytest_evals.suites.suite_config import Suite
    from pytest_evals.tasks.task_contract import Task

SCHEMA_VERSION = 1
SUITE_ERROR_ID = "suite-error"
#: ``error_kind`` of a collected case whose result never arrived (worker crash, interrupt).
MISSING_KIND = ErrorKind.INFRASTRUCTURE
#: How the message of such a result starts (it names the case's node id).
MISSING_PREFIX = "no result received for "
#: ``error_kind`` of a skipped result for a case pytest skipped before evaluating it (a
#: skip mark, ``pytest.skip()`` in a conftest's setup hook); the task's own skips
#: (a dry run) say ``skipped``.
SKIPPED_BY_PYTEST = ErrorKind.SKIPPED_BY_PYTEST
#: Metrics that count cases rather than measure the system: a gate on them alone
#: never excuses failed cases (``errors_<kind>`` too).
COUNT_METRICS = ("cases", "errors")


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
    #: The suite ran on part of its population (deselected, sampled, skipped or not run
    #: cases) and ``--evals-allow-partial`` was not given.
    PARTIAL = "partial run"
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
class Population:
    """What the controller knows of a suite's cases beyond its results: how many its
    file defines and why the others were not measured (see
    :mod:`pytest_evals.collection.population`), and pytest's xfail outcomes."""

    #: Cases the suite file defines (None: unknown, e.g. no xdist worker finished).
    defined: int | None = None
    #: Left out by pytest's selection (-k, -m, --deselect, --lf, a plugin).
    deselected: int = 0
    #: Left out by a command-line sample (--evals-sample, --evals-set sample=).
    sampled_out: int = 0
    #: The command line sampled the suite and ``defined`` could not be counted.
    sampled: bool = False
    #: Selected, but never started: the run stopped early (-x, --maxfail, Ctrl-C).
    not_run: int = 0
    #: Cases an xfail mark made XFAIL / XPASS, and the failed ones among the XFAILs.
    xfailed: int = 0
    xpassed: int = 0
    xfailed_failures: int = 0


@dataclass
class CaseCounts:
    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    #: Cases selected to run for the suite, and results that arrived for them (None:
    #: unknown, e.g. a suite recomputed from files).
    expected: int | None = None
    received: int | None = None
    #: The suite's whole population: cases its file defines (None: unknown), and the
    #: ones not measured, by why (see :class:`Population`).
    population: int | None = None
    deselected: int = 0
    sampled_out: int = 0
    sampled: bool = False
    not_run: int = 0
    #: pytest's xfail outcomes (the cases' own results are counted above as they are).
    xfailed: int = 0
    xpassed: int = 0
    #: Failed cases pytest reported XFAIL: expected failures, excused like pytest's.
    xfailed_failures: int = 0

    @property
    def partial(self) -> bool:
        """The suite's verdict covers part of its population only."""
        unmeasured = self.deselected + self.sampled_out + self.skipped + self.not_run
        return unmeasured > 0 or self.sampled

    def measured(self) -> int:
        """Cases that ran (passed, failed or errored)."""
        return self.total - self.skipped

    def partial_text(self) -> str:
        """``90 of 100 cases run (deselected 10)``: what a partial verdict covers."""
        return fmt.population_text({**self.to_json(), "sampled": self.sampled})

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
        # A complete run's population is its expected cases; a partial one says how
        # many the suite has and why the others were not measured.
        if self.partial:
            out.update(
                population=self.population,
                deselected=self.deselected,
                sampled_out=self.sampled_out,
                not_run=self.not_run,
            )
        if self.xfailed or self.xpassed:
            out.update(xfailed=self.xfailed, xpassed=self.xpassed)
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

    @property
    def partial(self) -> bool:
        """It ran on part of its population (passing only with ``--evals-allow-partial``)."""
        return self.cases.partial

    @property
    def verdict_word(self) -> str:
        """PASSED, FAILED, or PARTIAL: passed on part of its population (allowed)."""
        if not self.passed:
            return "FAILED"
        return "PARTIAL" if self.partial else "PASSED"

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
            "partial": self.partial,
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


def is_count_metric(path: str) -> bool:
    """``cases``, ``errors`` or ``errors_<kind>`` (an interval bound such as
    ``errors.ci_high`` is its metric's): they count cases, and say nothing about how
    good the answers were."""
    top = path.split(".")[0]
    return top in COUNT_METRICS or top.startswith("errors_")


def quality_gates(gates: list[GateResult]) -> list[GateResult]:
    """The gates on a quality metric of the suite (accuracy, precision, a judged
    mean, a task's own measure...): the only gates that may excuse failed cases."""
    return [g for g in gates if not is_count_metric(g.metric)]


def has_quality_value(metrics: MetricTree, scored: int) -> bool:
    """Whether the suite computed a quality metric: some case was scored, and some
    metric other than the case counts is defined."""
    return scored > 0 and any(
        metric.value is not None and not is_count_metric(path) for path, metric in walk(metrics)
    )


def verdict(
    counts: CaseCounts,
    gates: list[GateResult],
    problems: list[str],
    strict: bool,
    *,
    allow_partial: bool = False,
) -> list[Reason]:
    """Why the suite fails (none: it passes). A suite passes when its gates pass, nothing
    is wrong with it as a whole, it ran on its whole population (or
    ``--evals-allow-partial`` accepts part of it), and its failed/erroring cases are
    covered: failed cases by a gate on a quality metric of the suite (a gate on
    ``cases`` or ``errors`` says nothing about wrong answers), erroring cases by a gate
    on errors; for a suite without gates, by there being none (then it behaves like
    plain tests). Cases pytest reported XFAIL are expected failures and need no gate."""
    reasons = [Reason(ReasonKind.MISSED_GATE, g.describe()) for g in gates if not g.passed]
    reasons += [Reason(ReasonKind.PROBLEM, p) for p in problems]
    if counts.partial and not allow_partial:
        reasons.append(
            Reason(
                ReasonKind.PARTIAL,
                f"partial run: {counts.partial_text()}; the gates cover only those cases "
                "(--evals-allow-partial accepts a partial run)",
            )
        )
    cases: list[str] = []
    failed = counts.failed - counts.xfailed_failures
    if gates:
        if not errors_tolerated(counts, [g.metric for g in gates]):
            cases.append(f"{counts.errors} erroring case(s) and no gate on errors")
        if failed and not quality_gates(gates):
            cases.append(
                f"{failed} failed case(s) and no gate on a quality metric of the suite "
                "(gates on cases or errors do not excuse failed cases)"
            )
        if strict and counts.failed:
            cases.append(f"{counts.failed} failed case(s) (--evals-strict)")
    elif failed or counts.errors:
        cases.append(f"{failed} failed and {counts.errors} erroring case(s); the suite has no gates")
    return reasons + [Reason(ReasonKind.FAILED_CASES, text) for text in cases]


def no_quality_problem(counts: CaseCounts) -> str:
    """The suite-level problem of a gated suite that measured nothing it could gate."""
    return (
        f"no quality metric could be computed ({counts.errors} of {counts.total} case(s) errored, "
        f"{counts.skipped} skipped): gates on cases or errors alone cannot pass a suite"
    )


def missing_problem(missing: list[str], expected: int) -> str:
    """The suite-level problem of collected cases that never reported (never tolerated)."""
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return (
        f"{len(missing)} of {expected} collected case(s) returned no result "
        f"(worker crash or interrupted run): {shown}"
    )


def apply_population(counts: CaseCounts, population: Population) -> None:
    """Copy what the controller knows beyond the results into the counts."""
    counts.deselected, counts.sampled_out = population.deselected, population.sampled_out
    counts.sampled, counts.not_run = population.sampled, population.not_run
    counts.xfailed, counts.xpassed = population.xfailed, population.xpassed
    counts.xfailed_failures = population.xfailed_failures
    if counts.expected is not None:
        # Cases the run stopped before are selected but have no result.
        counts.expected += population.not_run
    if population.defined is not None:
        counts.population = population.defined
    elif counts.expected is not None:
        # Unknown selection (no worker reported it): at least what was selected.
        counts.population = counts.expected


def suite_summary(
    suite: Suite,
    task: Task[Any],
    results: list[CaseResult],
    strict: bool = False,
    accounted: bool = False,
    *,
    population: Population | None = None,
    allow_partial: bool = False,
) -> SuiteSummary:
    """``accounted``: ``results`` hold one entry per selected case that started, the
    ones that never reported as stand-ins (:func:`is_missing`); then the counts show
    expected vs received, and any missing case fails the suite, whatever its gates say.
    ``population``: the suite's cases beyond its results (deselected, sampled out, not
    run); a suite that ran on part of them fails unless ``allow_partial``."""
    counts = CaseCounts.of(results)
    missing = [f"{r.suite}::{r.case_id}" for r in results if is_missing(r)]
    if accounted:
        counts.expected, counts.received = counts.total, counts.total - len(missing)
    if population is not None:
        apply_population(counts, population)
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
    if gates and not has_quality_value(metrics, len(scored)):
        problems.append(no_quality_problem(counts))
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
        reasons=verdict(counts, gates, problems, strict, allow_partial=allow_partial),
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
