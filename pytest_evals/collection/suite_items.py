"""Collection: suite files become pytest files, their cases become items.

A suite whose configuration is broken becomes one erroring item rather than a
collection error, so the other suites still run (pytest stops the whole session on
collection errors).
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.collection.case_executor import get_executor
from pytest_evals.collection.collector_pause import collector_paused
from pytest_evals.collection.suite_loader import open_suite
from pytest_evals.hardening import redaction as redact
from pytest_evals.model.case_result import REPORT_ATTR, CaseResult
from pytest_evals.model.errors import ErrorKind, EvalsError
from pytest_evals.tasks.case_job import CaseJob

if TYPE_CHECKING:
    from pytest_evals.tasks.task_contract import CaseRef, Task

__all__ = ["CaseItem", "FailureRepr", "SuiteErrorItem", "SuiteFile", "open_suite"]

#: Report attribute carrying a case failure's crash location (path, line, message)
#: to the xdist controller, where the repr arrives as plain text (see FailureRepr).
CRASH_ATTR = "evals_crash"


class CaseFailure(pytest.fail.Exception):  # type: ignore[name-defined]
    """The case was evaluated and missed its expectation (a FAIL).

    An outcome without a Python traceback: the message says everything, and skipping
    pytest's source-parsing traceback formatting keeps 3,500 failures cheap.
    """

    # Shown as "CaseFailure: ..." in pytest's short summary, like pytest's own "Failed".
    __module__ = "builtins"

    def __init__(self, message: str) -> None:
        super().__init__(message, pytrace=False)


class CaseError(CaseFailure):
    """The case could not be evaluated (raised in setup, so pytest reports an ERROR)."""


def clear_finished_callers(tb: TracebackType) -> None:
    """Clear the locals of the frames that called ``tb``'s first frame and have returned
    (outwards until the first frame still running, whose callers are running too)."""
    frame = tb.tb_frame.f_back
    while frame is not None:
        try:
            frame.clear()
        except RuntimeError:  # still running
            return
        frame = frame.f_back


class SuiteFile(pytest.File):
    def case_nodeid(self, case_id: str) -> str:
        """A case item's node id, given as text: pytest (9.2) parses the ids it records for
        ``--lf``/``--ff`` (``suite.eval.yaml::c1[big]``: name ``c1``, params ``big``) but
        builds a child's id from its name whole (name ``c1[big]``, no params), so an id with
        a bracket, as every variant item's has, would never match the recorded failures
        and ``--lf`` would rerun everything. Parsed from text, both sides agree."""
        return f"{self.nodeid}::{case_id}"

    #: The first part of pytest's ``location`` of the items at this file's path (the path
    #: relative to the rootdir), as pytest computed it for the first of them.
    evals_items_relpath: str | None = None

    def collect(self) -> Iterator[pytest.Item]:
        # Every item yielded, before any plugin filters them (--lf keeps a failed
        # case's variant pairs whole from these: last_failed_pairs.py).
        self.yielded: list[pytest.Item] = []
        with collector_paused():  # builds long-lived objects only (collector_pause.py)
            for item in self._collect():
                self.yielded.append(item)
                yield item

    def _collect(self) -> Iterator[pytest.Item]:
        # The engine loop and the HTTP helper start now, while the suites are read.
        get_executor(self.config).warm_up()
        try:
            from pytest_evals.collection.case_ids import unique_refs

            _suite, task = open_suite(self.config, self.path, self.nodeid)
            collected = 0
            from pytest_evals.collection.variant_items import is_variant_task, variant_items

            if is_variant_task(task):
                # One item per case and variant: the variant's own task evaluates it.
                for index, ref, v_task in variant_items(task):
                    collected += 1
                    yield CaseItem.from_parent(self, name=ref.case_id, nodeid=self.case_nodeid(ref.case_id),
                                               ref=ref, task=v_task, index=index)
            for index, ref in enumerate(() if is_variant_task(task) else unique_refs(task.case_refs())):
                collected += 1
                yield CaseItem.from_parent(self, name=ref.case_id, nodeid=self.case_nodeid(ref.case_id),
                                           ref=ref, task=task, index=index)
        except EvalsError as exc:
            yield SuiteErrorItem.from_parent(self, name="suite-error", message=str(exc))
            return
        except Exception as exc:
            # A path the system refuses, a task's own bug: pytest would make it a
            # collection error, which interrupts every suite of the run.
            message = f"{self.path}: cannot collect the suite's cases: {type(exc).__name__}: {exc}"
            yield SuiteErrorItem.from_parent(self, name="suite-error", message=redact.scrub(message))
            return
        # Counted here, before any plugin trims the items (see population.py).
        from pytest_evals.collection.population import defined_count, population_counter

        defined, sampled = defined_count(self.config, self.path, self.nodeid)
        population_counter(self.config).record_collected(self.nodeid, collected, defined, sampled)


class SuiteErrorItem(pytest.Item):
    """Stands for a suite (or input file) that could not be read at all."""

    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def setup(self) -> None:
        raise CaseError(f"suite could not be loaded:\n{self.message}")

    def runtest(self) -> None:  # pragma: no cover - setup always raises
        pass

    def reportinfo(self) -> tuple[Path, int, str]:
        # A line number, not None: pytest's skip and xfail reporting (a conftest may mark
        # any item) takes the item's line from here and adds 1 to it.
        return self.path, 0, "suite configuration"

    def evals_attach_result(self, report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
        """Called by the plugin's ``pytest_runtest_makereport``: the error result rides
        on the setup report, like a case's."""
        if call.when != "setup":
            return
        result = CaseResult(
            suite=self.parent.nodeid if self.parent else self.nodeid,
            task="",
            case_id="suite-error",
            source=str(self.path),
            status="error",
            message=self.message,
            error_kind=ErrorKind.CONFIG,
        )
        setattr(report, REPORT_ATTR, result.to_json())


#: pytest's ``Item.location`` (a ``functools.cached_property``), whose function CaseItem calls.
_ITEM_LOCATION: Any = pytest.Item.__dict__["location"]


class CaseItem(pytest.Item):
    def __init__(self, *, ref: CaseRef, task: Task[Any], index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: What the worker evaluates for this item (it takes jobs, not items). Made here,
        #: not on first use: CPython (3.11) keeps an object's attributes in its class's
        #: compact shared-key layout only if it gains at most one attribute after the
        #: class's earlier instances were made; beyond that, it gets a dict of its own.
        #: A job made later (the prefetcher asks the items ahead for theirs) cost that
        #: dict, 0.8 kB a case.
        self.evals_job = CaseJob(self.nodeid, task, ref, index)
        self.evals_result: CaseResult | None = None
        #: The traceback of this item's CaseFailure, until its teardown (see evals_attach_result).
        self._evals_failure_tb: TracebackType | None = None
        self._evals_location: tuple[str, int | None, str] | None = None

    @property
    def location(self) -> tuple[str, int | None, str]:
        """pytest's own, kept in an attribute made in ``__init__``. pytest's is a
        ``functools.cached_property``, which stores through the item's ``__dict__`` and so
        gives every item a dict of its own (see ``evals_job``): 0.8 kB a case measured
        without pytest-rerunfailures; with it, its five attributes per item cost that
        dict anyway, as they do for plain pytest tests."""
        location = self._evals_location
        if location is None:
            # The suite file's path made relative once for all its cases: pytest makes it
            # absolute and looks it up for each (5 us of a cached case's 0.6 ms).
            parent = self.parent
            path, line, name = self.reportinfo()
            suite_file = parent if isinstance(parent, SuiteFile) and path is self.path else None
            if suite_file is not None and suite_file.evals_items_relpath is not None:
                location = (suite_file.evals_items_relpath, line, name)
            else:
                location = _ITEM_LOCATION.func(self)
                if suite_file is not None:
                    suite_file.evals_items_relpath = location[0]
            self._evals_location = location
        return location

    # The job holds the case's ref, task and position; the item reads them from it.
    @property
    def ref(self) -> CaseRef:
        return self.evals_job.ref

    @property
    def task(self) -> Task[Any]:
        return self.evals_job.task

    @property
    def index(self) -> int:
        return self.evals_job.index

    def setup(self) -> None:
        result = get_executor(self.config).result_for(self.evals_job, self.session.items)
        self.evals_result = result
        self.user_properties.append(("evals.status", result.status))
        for name, value in result.scores.items():
            # interned: one copy of each property name for all the run's cases
            self.user_properties.append((sys.intern(f"evals.score.{name}"), value))
        if result.status == "skipped":
            pytest.skip(result.message or "skipped")
        if result.status == "error":
            raise CaseError(format_failure(self, result))

    def evals_attach_result(self, report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
        """Called by the plugin's ``pytest_runtest_makereport``: the result rides on the
        report of the phase that decided the outcome."""
        if call.excinfo is not None and isinstance(call.excinfo.value, CaseFailure):
            # Our outcome, already rendered: nothing reads its frames again. A plugin that
            # keeps every failure's ExceptionInfo (pytest-rerunfailures does, on every
            # item, even without --reruns) kept each frame's locals alive: at 35,000
            # HaluEval cases, 100 MB of the 285 MB that plugin adds.
            traceback.clear_frames(call.excinfo.tb)
            self._evals_failure_tb = call.excinfo.tb
        when = call.when
        if when == "teardown" and self._evals_failure_tb is not None:
            # The frames that ran the failing phase (pytest's call_and_report) were still
            # running above: now they are done, and each holds that phase's CallInfo,
            # whose traceback leads back to them. Such a cycle outlived every failing
            # case until the garbage collector found it (at 2,000 HaluEval cases with
            # half failing, 51,000 objects; a large run's heap freezer could even freeze
            # them for the rest of the run). Cleared, the failure is freed when its last
            # user lets go.
            clear_finished_callers(self._evals_failure_tb)
            self._evals_failure_tb = None
        result = self.evals_result
        if result is None:
            return
        if when == "call" or (when == "setup" and report.outcome != "passed"):
            setattr(report, REPORT_ATTR, result.to_json())
            longrepr = report.longrepr
            if isinstance(longrepr, FailureRepr):
                setattr(report, CRASH_ATTR, longrepr.reprcrash.to_json())
        elif when == "teardown":
            # The controller keeps its own copy; items live to the end of the run.
            self.evals_result = None

    def runtest(self) -> None:
        result = self.evals_result
        assert result is not None
        if result.status == "failed":
            raise CaseFailure(format_failure(self, result))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailure):
            return failure_repr(self.ref, excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        # The case's line is in its data file, not in the suite file: name it in the
        # description rather than pair it with the suite's path. The line is the suite
        # file's first (0-based 0): pytest's skip/xfail marks (a conftest may add them to
        # cases) report "<path>:<line + 1>" and need a number here.
        return self.path, 0, f"{self.task.suite.name}::{self.ref.case_id} ({self.ref.source})"


class CrashLocation:
    """Where a case failed and why: the case's data file and line, pytest's
    ``<path>:<line>: <message>`` form (what ``--tb=line`` and the short summary show)."""

    def __init__(self, path: str, lineno: int | None, message: str) -> None:
        self.path, self.lineno, self.message = path, lineno, message

    def _first_line(self) -> str:
        return self.message.partition("\n")[0]

    def __str__(self) -> str:
        return f"{self.path}:{self.lineno}: {self._first_line()}"

    def toterminal(self, tw: Any) -> None:
        tw.write(self.path, bold=True, red=True)
        tw.line(f":{self.lineno}: {self._first_line()}")

    def to_json(self) -> list[Any]:
        return [self.path, self.lineno, self.message]


class FailureRepr:
    """A case failure as pytest shows it, built from public protocol only.

    pytest accepts any object with ``toterminal`` as a report's ``longrepr``; its
    terminal and JUnit reporters read ``reprcrash`` for the one-line form. Building it
    directly skips pytest's traceback walk, which with thousands of failing cases was a
    tenth of the run. Its text is scrubbed once here (``evals_scrubbed``), so the
    hardening layer does not render it again to search it. Under xdist a worker sends
    the text (``str()``) and :data:`CRASH_ATTR`; :func:`restore_failure_repr` rebuilds it.
    """

    evals_scrubbed = True

    def __init__(self, text: str, reprcrash: CrashLocation) -> None:
        self.text = text
        self.reprcrash = reprcrash

    def toterminal(self, tw: Any) -> None:
        for line in self.text.split("\n"):
            tw.line(line)

    def __str__(self) -> str:
        return self.text


def failure_repr(ref: CaseRef, exc: CaseFailure) -> FailureRepr:
    """The failure's repr; the crash location is the case's own file and line, so
    ``--tb=line`` points at the data."""
    message = redact.scrub(str(exc))
    path, line = ref.source, ref.line
    if line and path.endswith(f":{line}"):
        path = path[: -len(f":{line}")]
    return FailureRepr(message, CrashLocation(path, line, f"{type(exc).__name__}: {message}"))


def restore_failure_repr(report: pytest.TestReport, crash: Any) -> None:
    """On the xdist controller: the worker's case failure, text and crash location again."""
    path, lineno, message = crash
    # Typed as pytest's own repr classes, but any object with toterminal() is accepted.
    longrepr: Any = FailureRepr(str(report.longrepr), CrashLocation(str(path), lineno, str(message)))
    report.longrepr = longrepr


def format_failure(item: CaseItem, result: CaseResult) -> str:
    """The text a reviewer sees for a failed or erroring case (message first: the short
    summary shows only the first line)."""
    if result.status == "error":
        lines = [f"[{result.error_kind} error] {result.message}"]
        raw = result.details.get("raw_reply")
        if raw:
            lines.append(f"raw reply: {str(raw)[:2000]}")
        tb = result.details.get("traceback")
        if tb:
            lines.append(tb.rstrip())
    else:
        lines = [result.message or "case failed"]
    lines.append(f"case {item.ref.case_id} at {item.ref.source}")
    return "\n".join(lines)
