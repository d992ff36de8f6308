"""Session state: per-process runner and, on the controller, results and verdicts.

One :class:`EvalSession` per pytest process, registered as a plugin and reached with
:func:`get_state`. On an xdist worker it only evaluates cases; on the controller (or a
plain run) it also gathers the light results from the reports, aggregates each suite,
checks its gates and decides the exit status.
"""

from __future__ import annotations

import json
import os
import pickle
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_evals import inline
from pytest_evals.collect import CaseItem, open_suite
from pytest_evals.context import EvalContext
from pytest_evals.engine import Engine
from pytest_evals.errors import EvalsError, SuiteConfigError
from pytest_evals.partition import is_case_nodeid, owned_block, worker_number
from pytest_evals.results import REPORT_ATTR, CaseResult
from pytest_evals.runner import Prefetcher, drive, evaluate_case
from pytest_evals.suite import Override

STATE_KEY = pytest.StashKey["EvalSession"]()


def get_state(config: pytest.Config) -> EvalSession:
    return config.stash[STATE_KEY]


def get_engine(config: pytest.Config) -> Engine:
    """The session's event loop thread (shared with the LLM client and fixtures)."""
    return get_state(config).engine


def is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


def _overrides(config: pytest.Config) -> list[Override]:
    out: list[Override] = []
    generate = config.getoption("evals_generate", None)
    if generate is not None:
        out.append(Override("generate", bool(generate), only_if_known=True))
    for name in ("n_runs", "sample", "seed"):
        value = config.getoption(f"evals_{name}", None)
        if value is not None:
            out.append(Override(name, value, only_if_known=True))
    for text in config.getoption("evals_set", None) or []:
        try:
            out.append(Override.parse(text))
        except SuiteConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
    return out


def _spool_record(data: dict[str, Any]) -> bytes:
    try:
        return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # a target's odd output object: keep its text, as JSON files will
        return pickle.dumps(json.loads(json.dumps(data, default=str)), protocol=pickle.HIGHEST_PROTOCOL)


class EvalSession:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.overrides = _overrides(config)
        self.engine = Engine()
        self.ctx = EvalContext(config, self.engine)
        self.prefetcher: Prefetcher | None = None
        #: Cases are tried on pytest's thread until one needs I/O (see inline.py).
        self._inline = True
        #: Cases this process evaluated on pytest's thread (the rest went to the engine).
        self.inline_cases = 0
        self.started = time.time()
        self.case_timeout = float(config.getini("evals_case_timeout") or 900)
        # controller side
        self.results: dict[str, CaseResult] = {}
        self.summaries: list[dict[str, Any]] = []
        self.summary: dict[str, Any] | None = None
        self.exit_note: str | None = None
        #: Markdown summaries written at the end of the run (--evals-markdown, GitHub step summary).
        self.markdown_paths: list[str] = []
        self._untolerated = 0
        self.used_overrides: set[int] = set()
        self._failed_by_suite: dict[str, int] = defaultdict(int)
        self._errors_by_suite: dict[str, int] = defaultdict(int)
        # A private scratch file, read back only by this process: pickle writes a
        # result six times faster than JSON, which showed at 35,000 cases.
        fd, spool = tempfile.mkstemp(prefix="pytest-evals-", suffix=".pickle")
        os.close(fd)
        self.spool_path = Path(spool)
        self._spool = self.spool_path.open("ab")

    # -- evaluation (every process) ---------------------------------------------------
    def _start_prefetch(self, session: pytest.Session, first: CaseItem) -> None:
        """Prefetch this process's cases from ``first`` on (earlier ones ran inline)."""
        positions = [it for it in session.items if is_case_nodeid(it.nodeid)]
        here = next((i for i, it in enumerate(positions) if it is first), 0)
        workerinput = getattr(self.config, "workerinput", None)
        if workerinput is not None:
            mine = owned_block(
                len(positions), worker_number(workerinput["workerid"]), int(workerinput["workercount"])
            )
            owned = [positions[i] for i in mine if i >= here]
        else:
            owned = positions[here:]
        jobs = [
            (it.nodeid, it.task, it.ref, it.index)
            for it in owned
            if isinstance(it, CaseItem) and it.task.needs_engine()
        ]
        window = int(self.config.getini("evals_prefetch_window") or 0)
        if window <= 0:
            concurrency = self.config.getoption("evals_concurrency", None) or 32
            window = max(4 * int(concurrency), 256)
        self.prefetcher = Prefetcher(self.ctx, window)
        self.prefetcher.start(jobs)

    def result_for(self, item: CaseItem) -> CaseResult:
        task = item.task
        if not task.needs_engine():
            return drive(evaluate_case(task, item.ref, self.ctx, item.index))
        if self.prefetcher is None and self._inline:
            if task.inline_cached:
                done, result = inline.attempt(evaluate_case(task, item.ref, self.ctx, item.index))
                if done and result.status != "error":
                    self.inline_cases += 1
                    return result
                if done:  # errors are rare: re-run on the engine, which may be what it missed
                    return self.engine.run(evaluate_case(task, item.ref, self.ctx, item.index), self.case_timeout)
            # This case waits on I/O: overlap it and the rest from now on.
            self._inline = False
        if self.prefetcher is None:
            self._start_prefetch(item.session, item)
        assert self.prefetcher is not None
        if self.prefetcher.owns(item.nodeid):
            return self.prefetcher.result(item.nodeid, self.case_timeout)
        return self.engine.run(evaluate_case(task, item.ref, self.ctx, item.index), self.case_timeout)

    # -- gathering (controller) ---------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not is_controller(self.config):
            return
        data = getattr(report, REPORT_ATTR, None)
        if data is not None:
            self._spool.write(_spool_record(data))
            full = CaseResult.from_json(data)
            self.config.hook.pytest_evals_case_result(config=self.config, nodeid=report.nodeid, result=full)
            # pytest keeps every report to the end of the run; the details (prompts,
            # replies) now live in the spool, so the kept report carries the light part.
            result = full.light()
            setattr(report, REPORT_ATTR, result.to_json())
            self.results[report.nodeid] = result
            if result.status == "failed":
                self._failed_by_suite[result.suite] += 1
            elif result.status == "error":
                self._errors_by_suite[result.suite] += 1
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

    def iter_full_results(self) -> Iterator[dict[str, Any]]:
        """Every case result with its details, in arrival order (read back from the spool)."""
        self._spool.flush()
        with self.spool_path.open("rb") as fh:
            while True:
                try:
                    yield pickle.load(fh)
                except EOFError:
                    return

    def results_by_suite(self) -> dict[str, list[CaseResult]]:
        grouped: dict[str, list[CaseResult]] = defaultdict(list)
        for result in self.results.values():
            grouped[result.suite].append(result)
        for results in grouped.values():
            results.sort(key=lambda r: (r.index, r.case_id))
        return dict(grouped)

    def build_summaries(self) -> None:
        from pytest_evals.regression.plugin import apply_to_suite, case_results
        from pytest_evals.summary import suite_error_summary, suite_summary

        self.summaries = []
        strict = bool(self.config.getoption("evals_strict", False))
        for suite_id, results in sorted(self.results_by_suite().items()):
            path = self.config.rootpath / suite_id
            try:
                suite, task = open_suite(self.config, path, suite_id, self.used_overrides)
            except EvalsError as exc:
                self.summaries.append(suite_error_summary(suite_id, str(exc), results))
                continue
            summary = suite_summary(suite, task, results, strict)
            summary["case_results"] = case_results(results)
            apply_to_suite(self.config, summary, task, results)
            self.summaries.append(summary)

    def warnings(self) -> list[str]:
        """Run-level notes for the summary: overrides that reached no suite (typos)."""
        if not self.summaries:
            return []
        names = {s["name"] for s in self.summaries}
        notes = []
        for ov in self.overrides:
            if ov.only_if_known or id(ov) in self.used_overrides:
                continue
            if ov.suite is None:
                notes.append(f"--evals-set {ov.key}={ov.value!r}: no suite in this run has a field {ov.key.split('.')[0]!r}")
            elif ov.suite not in names:
                notes.append(
                    f"--evals-set {ov.suite}:{ov.key}={ov.value!r}: no suite named {ov.suite!r} in this run "
                    f"(suites: {', '.join(sorted(names))})"
                )
        return notes

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.prefetcher is not None:
            self.prefetcher.cancel()
        if not is_controller(self.config):
            return
        if not self.results:
            return
        from pytest_evals.summary import build_run_summary, write_outputs

        self.build_summaries()
        self.summary = build_run_summary(self)
        self.config.hook.pytest_evals_summary(config=self.config, summary=self.summary)
        self._decide_exit(session)
        self.summary["exit_status"] = int(session.exitstatus)
        if self.exit_note:
            self.summary["exit_note"] = self.exit_note
        write_outputs(self)

    def _decide_exit(self, session: pytest.Session) -> None:
        """Gates decide: a missed gate fails the run; case failures inside passing gates do not.

        A suite with gates states how good is good enough, so its individual misses are
        evidence (shown in the report), not verdicts. Errors are only tolerated where a
        gate on ``errors`` says how many may happen. ``--evals-strict`` turns this off.
        """
        # Each suite's verdict already says whether its failed and erroring cases are
        # covered (summary.verdict); the exit status follows the verdicts.
        if any(not s["passed"] for s in self.summaries):
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        if session.exitstatus != pytest.ExitCode.TESTS_FAILED or self._untolerated:
            return
        failed = sum(self._failed_by_suite.values())
        errors = sum(self._errors_by_suite.values())
        self.exit_note = (
            f"exit status 0: {failed} failed and {errors} erroring case(s) are within the "
            "gates of their suites (use --evals-strict to fail on any case)"
        )
        session.exitstatus = pytest.ExitCode.OK

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not is_controller(self.config) or not self.summaries:
            return
        from pytest_evals.summary import render_terminal

        render_terminal(terminalreporter, self)

    def close(self) -> None:
        if self.prefetcher is not None:
            self.prefetcher.cancel()
        self.engine.close()
        self._spool.close()
        self.spool_path.unlink(missing_ok=True)
