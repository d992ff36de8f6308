"""Hooks pytest_evals offers to conftest files and other plugins."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec(firstresult=True)
def pytest_evals_make_target(config: pytest.Config, suite: Any, spec: Any) -> Any:
    """Return an object with ``async run(case: dict)`` to act as the suite's target
    (the system under test of ``generate: true``), or None to use ``spec`` as written."""


def pytest_evals_summary(config: pytest.Config, summary: dict[str, Any]) -> None:
    """Called on the controller with the run summary (the ``--evals-json`` document)
    before it is printed and written; plugins may add sections (e.g. ``summary["llm"]``)."""


def pytest_evals_case_result(config: pytest.Config, nodeid: str, result: Any) -> None:
    """Called on the controller once per case, in arrival order, with the case's node
    id and its full :class:`~pytest_evals.results.CaseResult` (details included:
    prompts, replies).

    The test report keeps only the light part afterwards (the details are spooled to
    disk), so a plugin that wants the details of every case reads them here."""
