"""Hooks pytest_evals offers to conftest files and other plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from pytest_evals.controller.aggregator import Aggregator
    from pytest_evals.model.case_result import CaseResult
    from pytest_evals.suites.suite_config import Suite


@pytest.hookspec(firstresult=True)
def pytest_evals_make_target(config: pytest.Config, suite: Suite, spec: Any) -> Any:
    """Return an object with ``async run(case: dict)`` to act as the suite's target
    (the system under test of ``generate: true``), or None to use ``spec`` as written."""


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
def pytest_evals_write_outputs(config: pytest.Config, summary: dict[str, Any], aggregator: Aggregator) -> None:
    """Called once on the controller, after the exit status is decided: write the run's
    artifacts. Every writer implements this hook (the core's JSON summary, generated
    outputs and JUnit properties; the result folder; HarpIA files; the red-team store). The core writes
    generated outputs first (``tryfirst``: others point at them) and the JSON summary
    last (``trylast``), so the sections other writers add to ``summary`` are in it."""


@pytest.hookspec
def pytest_evals_suite_folder(
    config: pytest.Config, folder: Path, suite: dict[str, Any], results: Sequence[CaseResult]
) -> dict[str, str] | None:
    """Called on the controller for each suite's folder of a ``--evals-report-dir`` run,
    after the core wrote its files there: write (or rewrite) files in ``folder`` from the
    suite's summary and its light results; return ``{key: path relative to the run
    folder}`` for the manifest. How a family shapes its files like its own tool's."""
