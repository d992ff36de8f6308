"""The controller side: gathers case results, accounts for every collected case,
summarises each suite, checks its gates and decides the exit status.

Registered only where ``not hasattr(config, "workerinput")`` (a plain run or the xdist
controller), as pytest registers its ``LogXML``; reached with :func:`get_aggregator`.
Results arrive on test reports (xdist replays the workers' reports here), keyed by
node id. The controller learns which cases exist from collection (a plain run) or
from the workers' collection (``pytest_xdist_node_collection_finished``), so a case
whose result never arrives (its worker was killed) is counted as an infrastructure
error rather than silently left out; a case never started because the run stopped
early (``-x``, ``--maxfail``, an interrupt) is counted as not run. Each suite's whole
population (:mod:`pytest_evals.collection.population`: what its file defines, before
``-k``/``--lf``/a command-line sample) comes from this process's collection or from the
workers' (``pytest_testnodedown``), so a verdict on part of a suite says so (PARTIAL).

Outcomes pytest decides without the case's evaluation are counted as what they are: a
case skipped by a mark or by ``pytest.skip()`` in a hook is skipped (not measured), a
rerun attempt (pytest-rerunfailures) is replaced by the final one, and an xfail mark's
XFAIL/XPASS is recorded beside the case's own result.

It knows no output and no feature: plugins add to each suite's verdict through
``pytest_evals_suite_verdict``, and read the finished run (a
:class:`~pytest_evals.controller.run_report.RunReport`) in ``pytest_evals_write_outputs``
and the terminal summary.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals import __version__
from pytest_evals.collection.population import (
    WORKEROUTPUT_KEY,
    SuitePopulation,
    population_counter,
    populations_from_json,
    sample_option_error,
)
from pytest_evals.collection.suite_loader import open_suite, suite_cache
from pytest_evals.collection.xdist_blocks import is_case_nodeid
from pytest_evals.collection.xdist_rootdir import share_rootdir
from pytest_evals.controller.artifact_writers import call_writers, fail_exit_status
from pytest_evals.controller.result_spool import ResultSpool
from pytest_evals.controller.run_report import RUN_REPORT_KEY, RunReport, group_by_suite
from pytest_evals.model.case_result import REPORT_ATTR, CaseResult, Status
from pytest_evals.model.errors import ErrorKind, EvalsError

if TYPE_CHECKING:
    from pytest_evals.controller.suite_verdict import Population, SuiteSummary

AGGREGATOR_KEY = pytest.StashKey["Aggregator"]()

#: What a logged case report keeps of its keywords and (but for teardown's, which JUnit
#: XML reads) properties. The properties are an immutable tuple, which every reader of
#: a report (JUnit XML, report-log's JSON) takes as it takes a list.
_NO_KEYWORDS: dict[str, Any] = {}
_NO_PROPERTIES: tuple[tuple[str, object], ...] = ()


def get_aggregator(config: pytest.Config) -> Aggregator | None:
    """The controller's aggregator; None on an xdist worker."""
    return config.stash.get(AGGREGATOR_KEY, None)


def is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


def stand_in_result(nodeid: str, index: int, status: Status, kind: ErrorKind, message: str) -> CaseResult:
    """The result the controller records for a collected case that brought none."""
    suite, _, case_id = nodeid.partition("::")
    return CaseResult(
        suite=suite, task="", case_id=case_id, source=suite, index=index, status=status,
        error_kind=kind, message=message, details={"nodeid": nodeid},
    )


def missing_result(nodeid: str, index: int) -> CaseResult:
    """The result recorded for a collected case that never reported."""
    from pytest_evals.controller.suite_verdict import MISSING_KIND, MISSING_PREFIX

    message = f"{MISSING_PREFIX}{nodeid}: the process running it died or the run was interrupted"
    return stand_in_result(nodeid, index, "error", MISSING_KIND, message)


def skip_reason(report: pytest.TestReport) -> str:
    """The reason of a skipped report (``longrepr`` is ``(path, line, reason)``)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr or "")
    return reason.removeprefix("Skipped: ") or "skipped"


def skipped_result(nodeid: str, index: int, reason: str) -> CaseResult:
    """The result of a case pytest skipped before it was evaluated (a skip mark, a
    ``pytest.skip()`` in a setup hook): not measured, and not a crash."""
    return stand_in_result(
        nodeid, index, "skipped", ErrorKind.SKIPPED_BY_PYTEST, f"skipped before evaluation: {reason}"
    )


def allow_partial(config: pytest.Config) -> bool:
    """``--evals-allow-partial`` or ini ``evals_allow_partial``."""
    return bool(config.getoption("evals_allow_partial", False) or config.getini("evals_allow_partial"))


def stopped_early(session: pytest.Session) -> bool:
    """The run stopped before every selected case started: ``-x``/``--maxfail`` (a plain
    run sets ``shouldfail``; xdist interrupts the session), ``shouldstop``, Ctrl-C."""
    return bool(session.shouldfail or session.shouldstop) or session.exitstatus == pytest.ExitCode.INTERRUPTED


class Aggregator:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started = time.time()
        self.strict = bool(config.getoption("evals_strict", False))
        self.allow_partial = allow_partial(config)
        #: Each suite's population (what its file defines, collected, selected), from this
        #: process's collection or, under xdist, from the first worker that reported it.
        self.population: dict[str, SuitePopulation] = {}
        #: Cases pytest skipped before their evaluation (a mark, a hook), with the reason.
        self.skipped_by_pytest: dict[str, str] = {}
        #: Cases whose xfail mark made pytest report XFAIL or XPASS ("xfailed"/"xpassed").
        self.xfail_outcomes: dict[str, str] = {}
        #: Cases that reported a failure without a result (an xdist crash report, an
        #: error in a setup hook): never "not run", whenever the run stopped.
        self._failed_without_result: set[str] = set()
        #: Selected cases never started because the run stopped early, by suite.
        self.not_run: dict[str, list[str]] = {}
        #: Light results (no details) by node id.
        self.results: dict[str, CaseResult] = {}
        #: Case node ids collected, in collection order (None until collection is known).
        self.expected: list[str] | None = None
        #: Node ids of collected cases without a result, by suite (set at the end).
        self.missing: dict[str, list[str]] = {}
        self.suites: list[SuiteSummary] = []
        #: The run summary (the ``--evals-json`` document), built at session finish.
        self.summary: dict[str, Any] | None = None
        self.exit_note: str | None = None
        #: Cases whose first measured result was a quality failure and that pytest ran
        #: again (pytest-rerunfailures): that failure is their result. Reruns retry what
        #: kept a case from being measured (an endpoint's error, a crash), never a
        #: measurement: best-of-N attempts would pass a system wrong on every first try.
        self.failure_kept_over_rerun: set[str] = set()
        self._untolerated = 0
        self._failed = 0
        self._errors = 0
        #: Full results (details included), on disk: the reports keep the light part.
        self.spool = ResultSpool.for_config(config)

    # -- what was collected ---------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # Not called on an xdist controller (it does not collect); the hook below is.
        self.expected = [it.nodeid for it in session.items if is_case_nodeid(it.nodeid)]
        self._check_sample_option(self.expected)
        # The counter (registered before this plugin) has counted the selection.
        self.population = dict(population_counter(self.config).suites)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        # xdist aborts a run whose workers collected differently: the first one is it.
        if self.expected is None:
            self.expected = [nodeid for nodeid in ids if is_case_nodeid(nodeid)]
            self._check_sample_option(self.expected)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, specs: Sequence[Any]) -> None:
        # The workers must name suites as this process does (it opens <rootdir>/<node id>).
        share_rootdir(self.config, specs)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        # A worker that finished sends its population counts (population.py); a crashed
        # one sends nothing, and every worker counted the same suites.
        output = getattr(node, "workeroutput", None) or {}
        for suite, counts in populations_from_json(output.get(WORKEROUTPUT_KEY)).items():
            self.population.setdefault(suite, counts)

    def _check_sample_option(self, nodeids: Sequence[str]) -> None:
        if self.config.getoption("evals_sample", None) is None:
            return
        message = sample_option_error(self.config, (n.partition("::")[0] for n in nodeids))
        if message is not None:
            raise pytest.UsageError(message)

    # -- gathering ------------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, REPORT_ATTR, None)
        if report.outcome == "rerun":
            # pytest-rerunfailures: an attempt that will be run again. An erroring one is
            # replaced by the final attempt; a quality failure stands (see __init__).
            if data is not None and report.nodeid not in self.failure_kept_over_rerun:
                first = CaseResult.from_json(data)
                if first.status == "failed":
                    self.failure_kept_over_rerun.add(report.nodeid)
                    if report.nodeid in self.results:
                        self._forget(report.nodeid)
                    self._record(report.nodeid, first, data)
            return
        case = is_case_nodeid(report.nodeid)
        if data is not None and report.nodeid in self.failure_kept_over_rerun:
            # a later attempt of a case whose failure stands: the report shows that result
            setattr(report, REPORT_ATTR, self.results[report.nodeid].to_json())
        elif data is not None:
            full = CaseResult.from_json(data)
            if report.nodeid in self.results:
                self._forget(report.nodeid)
            self._record(report.nodeid, full, data)
            # pytest keeps every report to the end of the run; the details (prompts,
            # replies) now live in the spool, so the kept report carries the light part.
            setattr(report, REPORT_ATTR, self.results[report.nodeid].to_json())
            self._note_xfail(report, full)
        elif report.failed:
            self._untolerated += 1
            if case:
                self._failed_without_result.add(report.nodeid)
        elif report.skipped and case and report.when == "setup":
            # Skipped before the case was evaluated: a skip mark, pytest.skip() in a
            # conftest's setup hook. Not measured, and not a crash.
            self.skipped_by_pytest[report.nodeid] = skip_reason(report)
        if case:
            # pytest's terminal summary keeps every report to the end of the run, and
            # under xdist each arrives with its own copies: at 35,000 cases the
            # controller held 60 MB of them. Nothing reads a case report's keywords
            # after this hook, and JUnit XML takes properties from the teardown report.
            # One shared empty value for all of them (three reports a case): nothing
            # writes to a report's keywords or properties after it is logged.
            report.keywords = _NO_KEYWORDS
            if report.when != "teardown":
                report.user_properties = _NO_PROPERTIES  # type: ignore[assignment]

    def _note_xfail(self, report: pytest.TestReport, result: CaseResult) -> None:
        """An xfail mark: pytest reports XFAIL (``skipped`` with ``wasxfail``) or XPASS
        (``passed`` with ``wasxfail``); a strict XPASS is a failed report of a case whose
        result passed, which no gate may excuse."""
        if hasattr(report, "wasxfail"):
            self.xfail_outcomes[report.nodeid] = "xfailed" if report.skipped else "xpassed"
        elif report.failed and result.status == "passed":
            self.xfail_outcomes[report.nodeid] = "xpassed"
            self._untolerated += 1

    def _forget(self, nodeid: str) -> None:
        """A second result for a case (a rerun whose earlier attempt was not marked
        "rerun"): the later one replaces it in the counts."""
        previous = self.results.pop(nodeid)
        if previous.status == "failed":
            self._failed -= 1
        elif previous.status == "error":
            self._errors -= 1
        self.xfail_outcomes.pop(nodeid, None)

    def _record(self, nodeid: str, full: CaseResult, data: dict[str, Any] | None = None) -> None:
        self.spool.append(full.to_json() if data is None else data)
        self.config.hook.pytest_evals_case_result(config=self.config, nodeid=nodeid, result=full)
        result = full.light()
        self.results[nodeid] = result
        if result.status == "failed":
            self._failed += 1
        elif result.status == "error":
            self._errors += 1

    def _account_missing(self, stopped: bool) -> None:
        """Every selected case without a result: skipped by pytest (a result saying so),
        never started because the run stopped early (``stopped``: not run), or lost (an
        infrastructure error)."""
        positions: dict[str, int] = defaultdict(int)
        for nodeid in self.expected or []:
            suite = nodeid.partition("::")[0]
            index = positions[suite]
            positions[suite] += 1
            if nodeid in self.results:
                continue
            reason = self.skipped_by_pytest.get(nodeid)
            if reason is not None:
                self._record(nodeid, skipped_result(nodeid, index, reason))
            elif stopped and nodeid not in self._failed_without_result:
                self.not_run.setdefault(suite, []).append(nodeid)
            else:
                self.missing.setdefault(suite, []).append(nodeid)
                self._record(nodeid, missing_result(nodeid, index))

    # -- summaries and verdicts -----------------------------------------------------------------
    def build_summaries(self) -> None:
        from pytest_evals.controller.suite_verdict import suite_error_summary, suite_summary

        self.suites = []
        # After _account_missing, the results hold one entry per collected case.
        accounted = self.expected is not None
        grouped = group_by_suite(self.results.values())
        for suite_id in self.not_run:
            grouped.setdefault(suite_id, [])
        for suite_id, results in sorted(grouped.items()):
            path = self.config.rootpath / suite_id
            try:
                suite, task = open_suite(self.config, path, suite_id)
            except EvalsError as exc:
                summary = suite_error_summary(suite_id, str(exc), results)
            else:
                try:
                    summary = self._variant_summary(suite, task, results, accounted) or suite_summary(
                        suite,
                        task,
                        results,
                        self.strict,
                        accounted,
                        population=self._population_of(suite_id, results) if accounted else None,
                        allow_partial=self.allow_partial,
                    )
                except Exception as exc:
                    # One suite's values the summary cannot hold must not take every
                    # suite's verdict and artifact with it: that suite fails, named.
                    summary = suite_error_summary(suite_id, f"{path}: its summary cannot be built: {exc!r}", results)
                    self.suites.append(summary)
                    continue
                # Features add their reasons and sections (regression gates against a
                # baseline, what a later run pairs with) once the suite's own gates are checked.
                try:
                    self.config.hook.pytest_evals_suite_verdict(config=self.config, suite=summary, task=task, results=results)
                except Exception as exc:
                    summary.add_problem(f"a plugin's verdict on this suite failed: {exc!r}")
            self.suites.append(summary)

    def _variant_summary(self, suite: Any, task: Any, results: list[CaseResult], accounted: bool) -> SuiteSummary | None:
        """A suite with variants: each variant summarised alone, side by side (None: no variants)."""
        from pytest_evals.collection.variant_items import is_variant_task

        if not is_variant_task(task):
            return None
        from pytest_evals.controller.variant_matrix import variant_suite_summary

        prefix = suite.nodeid + "::"
        return variant_suite_summary(
            suite, task, results, self.strict, accounted,
            population=self._population_of(suite.nodeid, results) if accounted else None,
            allow_partial=self.allow_partial,
            selected=[n for n in self.expected or [] if n.startswith(prefix)],
            not_run=self.not_run.get(suite.nodeid, []), xfail=self.xfail_outcomes,
        )

    def _population_of(self, suite_id: str, results: list[CaseResult]) -> Population:
        """What the suite's verdict needs to know about the cases it did not measure."""
        from pytest_evals.controller.suite_verdict import Population

        counts = self.population.get(suite_id)
        outcomes = [self.xfail_outcomes.get(f"{r.suite}::{r.case_id}") for r in results]
        return Population(
            defined=counts.defined if counts is not None else None,
            deselected=counts.deselected if counts is not None else 0,
            sampled_out=counts.sampled_out if counts is not None else 0,
            sampled=counts.sampled if counts is not None else False,
            not_run=len(self.not_run.get(suite_id, [])),
            xfailed=outcomes.count("xfailed"),
            xpassed=outcomes.count("xpassed"),
            xfailed_failures=sum(
                1 for r, o in zip(results, outcomes, strict=True) if o == "xfailed" and r.status == "failed"
            ),
        )

    def warnings(self) -> list[str]:
        """Run-level notes for the summary: overrides that reached no suite (typos), and
        failures that reruns did not replace."""
        if not self.suites:
            return []
        cache = suite_cache(self.config)
        names = {s.name for s in self.suites}
        notes = []
        if self.failure_kept_over_rerun:
            notes.append(
                f"{len(self.failure_kept_over_rerun)} failed case(s) were run again (--reruns): their first "
                "measured result counts, since reruns retry errors, not measurements"
            )
        for ov in cache.overrides:
            if ov.only_if_known or id(ov) in cache.used_overrides:
                continue
            if ov.suite is None:
                notes.append(f"--evals-set {ov.key}={ov.value!r}: no suite in this run has a field {ov.key.split('.')[0]!r}")
            elif ov.suite not in names:
                notes.append(
                    f"--evals-set {ov.suite}:{ov.key}={ov.value!r}: no suite named {ov.suite!r} in this run "
                    f"(suites: {', '.join(sorted(names))})"
                )
        return notes

    def run_summary(self) -> dict[str, Any]:
        from pytest_evals.controller.suite_verdict import SCHEMA_VERSION

        return {
            "schema_version": SCHEMA_VERSION,
            "pytest_evals_version": __version__,
            "started_at": self.started,
            "duration_s": None,
            "passed": all(s.passed for s in self.suites),
            "partial": any(s.partial for s in self.suites),
            "allow_partial": self.allow_partial,
            "warnings": self.warnings(),
            "suites": [s.to_json() for s in self.suites],
        }

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly or session.exitstatus == pytest.ExitCode.USAGE_ERROR:
            return
        self._account_missing(stopped_early(session))
        if not self.results and not self.not_run:
            return
        self.build_summaries()
        self.summary = self.run_summary()
        self.config.hook.pytest_evals_summary(config=self.config, summary=self.summary)
        self._decide_exit(session)
        self.summary["exit_status"] = int(session.exitstatus)
        if self.exit_note:
            self.summary["exit_note"] = self.exit_note
        self.summary["duration_s"] = round(time.time() - self.started, 3)
        report = RunReport(
            config=self.config,
            summary=self.summary,
            suites=self.suites,
            warnings=list(self.summary["warnings"]),
            exit_note=self.exit_note,
            results=self.results,
            spool=self.spool,
        )
        self.config.stash[RUN_REPORT_KEY] = report
        # Every artifact is written here, once the exit status is known, by whoever
        # implements the hook (the output layer for the core's own files), each on its
        # own: one that fails is a problem line and exit status 1, not a lost run.
        call_writers(self.config, report)
        fail_exit_status(session)

    def _decide_exit(self, session: pytest.Session) -> None:
        """Gates decide: a missed gate fails the run; case failures inside passing gates do not.

        A suite with a gate on a quality metric states how good is good enough, so its
        individual misses are evidence (shown in the report), not verdicts; gates on
        ``cases``/``errors`` excuse no miss. Errors are only tolerated where a gate on
        ``errors`` says how many may happen. A suite run on part of its population fails
        unless ``--evals-allow-partial``. ``--evals-strict`` fails on any failed case.
        """
        # Each suite's verdict already says whether its failed and erroring cases are
        # covered (summary.verdict); the exit status follows the verdicts.
        if any(not s.passed for s in self.suites):
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        if session.exitstatus != pytest.ExitCode.TESTS_FAILED or self._untolerated:
            return
        self.exit_note = (
            f"exit status 0: {self._failed} failed and {self._errors} erroring case(s) are within the "
            "gates of their suites (use --evals-strict to fail on any case)"
        )
        session.exitstatus = pytest.ExitCode.OK

    def close(self) -> None:
        self.spool.close()
