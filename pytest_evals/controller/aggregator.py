"""The controller side: gathers case results, accounts for every collected case,
summarises each suite, checks its gates and decides the exit status.

Registered only where ``not hasattr(config, "workerinput")`` (a plain run or the xdist
controller), as pytest registers its ``LogXML``; reached with :func:`get_aggregator`.
Results arrive on test reports (xdist replays the workers' reports here), keyed by
node id. The controller learns which cases exist from collection (a plain run) or
from the workers' collection (``pytest_xdist_node_collection_finished``), so a case
whose result never arrives (its worker was killed, the run was interrupted) is counted
as an infrastructure error rather than silently left out.

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
from pytest_evals.collection.suite_loader import open_suite, suite_cache
from pytest_evals.collection.xdist_blocks import is_case_nodeid
from pytest_evals.controller.result_spool import ResultSpool
from pytest_evals.controller.run_report import RUN_REPORT_KEY, RunReport, group_by_suite
from pytest_evals.model.case_result import REPORT_ATTR, CaseResult
from pytest_evals.model.errors import EvalsError

if TYPE_CHECKING:
    from pytest_evals.controller.suite_verdict import SuiteSummary

AGGREGATOR_KEY = pytest.StashKey["Aggregator"]()


def get_aggregator(config: pytest.Config) -> Aggregator | None:
    """The controller's aggregator; None on an xdist worker."""
    return config.stash.get(AGGREGATOR_KEY, None)


def is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


def missing_result(nodeid: str, index: int) -> CaseResult:
    """The result recorded for a collected case that never reported."""
    from pytest_evals.controller.suite_verdict import MISSING_KIND, MISSING_PREFIX

    suite, _, case_id = nodeid.partition("::")
    return CaseResult(
        suite=suite,
        task="",
        case_id=case_id,
        source=suite,
        index=index,
        status="error",
        error_kind=MISSING_KIND,
        message=f"{MISSING_PREFIX}{nodeid}: the process running it died or the run was interrupted",
        details={"nodeid": nodeid},
    )


class Aggregator:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started = time.time()
        self.strict = bool(config.getoption("evals_strict", False))
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
        self._untolerated = 0
        self._failed = 0
        self._errors = 0
        #: Full results (details included), on disk: the reports keep the light part.
        self.spool = ResultSpool()

    # -- what was collected ---------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # Not called on an xdist controller (it does not collect); the hook below is.
        self.expected = [it.nodeid for it in session.items if is_case_nodeid(it.nodeid)]

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        # xdist aborts a run whose workers collected differently: the first one is it.
        if self.expected is None:
            self.expected = [nodeid for nodeid in ids if is_case_nodeid(nodeid)]

    # -- gathering ------------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, REPORT_ATTR, None)
        if data is not None:
            full = CaseResult.from_json(data)
            self._record(report.nodeid, full, data)
            # pytest keeps every report to the end of the run; the details (prompts,
            # replies) now live in the spool, so the kept report carries the light part.
            setattr(report, REPORT_ATTR, self.results[report.nodeid].to_json())
        elif report.failed:
            self._untolerated += 1
        if is_case_nodeid(report.nodeid):
            # pytest's terminal summary keeps every report to the end of the run, and
            # under xdist each arrives with its own copies: at 35,000 cases the
            # controller held 60 MB of them. Nothing reads a case report's keywords
            # after this hook, and JUnit XML takes properties from the teardown report.
            report.keywords = {}
            if report.when != "teardown":
                report.user_properties = []

    def _record(self, nodeid: str, full: CaseResult, data: dict[str, Any] | None = None) -> None:
        self.spool.append(full.to_json() if data is None else data)
        self.config.hook.pytest_evals_case_result(config=self.config, nodeid=nodeid, result=full)
        result = full.light()
        self.results[nodeid] = result
        if result.status == "failed":
            self._failed += 1
        elif result.status == "error":
            self._errors += 1

    def _account_missing(self) -> None:
        """Every collected case without a result becomes an infrastructure error."""
        positions: dict[str, int] = defaultdict(int)
        for nodeid in self.expected or []:
            suite = nodeid.partition("::")[0]
            index = positions[suite]
            positions[suite] += 1
            if nodeid not in self.results:
                self.missing.setdefault(suite, []).append(nodeid)
                self._record(nodeid, missing_result(nodeid, index))

    # -- summaries and verdicts -----------------------------------------------------------------
    def build_summaries(self) -> None:
        from pytest_evals.controller.suite_verdict import suite_error_summary, suite_summary

        self.suites = []
        # After _account_missing, the results hold one entry per collected case.
        accounted = self.expected is not None
        for suite_id, results in sorted(group_by_suite(self.results.values()).items()):
            path = self.config.rootpath / suite_id
            try:
                suite, task = open_suite(self.config, path, suite_id)
            except EvalsError as exc:
                summary = suite_error_summary(suite_id, str(exc), results)
            else:
                summary = suite_summary(suite, task, results, self.strict, accounted)
                # Features add their reasons and sections (regression gates against a
                # baseline, what a later run pairs with) once the suite's own gates are checked.
                self.config.hook.pytest_evals_suite_verdict(config=self.config, suite=summary, task=task, results=results)
            self.suites.append(summary)

    def warnings(self) -> list[str]:
        """Run-level notes for the summary: overrides that reached no suite (typos)."""
        if not self.suites:
            return []
        cache = suite_cache(self.config)
        names = {s.name for s in self.suites}
        notes = []
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
            "warnings": self.warnings(),
            "suites": [s.to_json() for s in self.suites],
        }

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:
            return
        self._account_missing()
        if not self.results:
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
        # implements the hook (the output layer for the core's own files).
        self.config.hook.pytest_evals_write_outputs(config=self.config, summary=self.summary, report=report)

    def _decide_exit(self, session: pytest.Session) -> None:
        """Gates decide: a missed gate fails the run; case failures inside passing gates do not.

        A suite with gates states how good is good enough, so its individual misses are
        evidence (shown in the report), not verdicts. Errors are only tolerated where a
        gate on ``errors`` says how many may happen. ``--evals-strict`` turns this off.
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
