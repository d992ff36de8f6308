"""Hooks pytest_evals offers to conftest files and other plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from pytest_evals.controller.run_report import RunReport
    from pytest_evals.controller.suite_verdict import SuiteSummary
    from pytest_evals.model.case_result import CaseResult
    from pytest_evals.suites.suite_config import Suite
    from pytest_evals.tasks.task_contract import Task


@pytest.hookspec(firstresult=True)
def pytest_evals_make_target(config: pytest.Config, suite: Suite, spec: Any) -> Any:
    """Return an object with ``async run(case: dict)`` to act as the suite's target
    (the system under test of ``generate: true``), or None to use ``spec`` as written."""


@pytest.hookspec
def pytest_evals_suite_verdict(config: pytest.Config, suite: SuiteSummary, task: Task[Any], results: Sequence[CaseResult]) -> None:
    """Called on the controller once per suite whose file loaded, after its own gates are
    checked and before the run summary is built, with its light results in case order.

    A feature that judges suites adds to the verdict here: a
    :class:`~pytest_evals.controller.suite_verdict.Reason` in ``suite.reasons`` fails the
    suite (``suite.add_problem`` for something wrong with it as a whole), and
    ``suite.sections`` become keys of the suite's JSON entry. The regression plugin checks
    ``max_drop``/``max_rise`` gates against the baseline run here and adds the
    ``case_results`` a later run pairs with."""


@pytest.hookspec
def pytest_evals_summary(config: pytest.Config, summary: dict[str, Any]) -> None:
    """Called on the controller with the run summary (the ``--evals-json`` document)
    before it is printed and written; plugins may add sections (e.g. ``summary["llm"]``)."""


@pytest.hookspec
def pytest_evals_case_result(config: pytest.Config, nodeid: str, result: CaseResult) -> None:
    """Called on the controller once per case, in arrival order, with the case's node
    id and its full :class:`~pytest_evals.model.case_result.CaseResult` (details included:
    prompts, replies).

    The test report keeps only the light part afterwards (the details are spooled to
    disk), so a plugin that wants the details of every case reads them here."""


@pytest.hookspec
def pytest_evals_write_outputs(config: pytest.Config, summary: dict[str, Any], report: RunReport) -> None:
    """Called once on the controller, after the exit status is decided: write the run's
    artifacts from ``report`` (suites and verdicts, every case's light result, the full
    results on demand; ``summary`` is ``report.summary``). Every writer implements this
    hook (the core's JSON summary, generated outputs and JUnit properties; the result
    folder; the Markdown summary; HarpIA files; the red-team store). The core writes
    generated outputs first (``tryfirst``: others point at them) and the JSON summary
    last (``trylast``), so the sections other writers add to ``summary`` are in it.

    Each implementation is called on its own
    (:func:`pytest_evals.controller.artifact_writers.call_writers`): one that raises is an
    artifact problem (a terminal line, ``artifact_problems`` in the summary, exit status
    1) and the others still run. Decorate it with ``names_artifact("...")`` to name it."""


@pytest.hookspec
def pytest_evals_terminal_suite(config: pytest.Config, terminalreporter: pytest.TerminalReporter, suite: SuiteSummary) -> None:
    """Called on the controller by the terminal summary under each suite's table and
    verdict lines: write the feature's lines about that suite (the regression plugin's
    "vs baseline" block with its paired tests and flipped cases)."""


@pytest.hookspec
def pytest_evals_terminal_summary(config: pytest.Config, terminalreporter: pytest.TerminalReporter) -> None:
    """Called on the controller at the end of pytest_evals' terminal summary (after the
    suites, also in a run without any): write the feature's run-level lines, such as the
    files it wrote or its usage totals. A section with its own heading may instead
    implement pytest's ``pytest_terminal_summary``."""


@pytest.hookspec
def pytest_evals_suite_folder(
    config: pytest.Config, folder: Path, suite: dict[str, Any], results: Sequence[CaseResult]
) -> dict[str, str] | None:
    """Called on the controller for each suite's folder of a ``--evals-report-dir`` run,
    after the core wrote its files there: write (or rewrite) files in ``folder`` from the
    suite's summary and its light results; return ``{key: path relative to the run
    folder}`` for the manifest. How a family shapes its files like its own tool's."""
