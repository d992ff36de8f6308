"""What a finished run produced, as the outputs read it: the run report.

The aggregator builds one at session finish, once the exit status is decided, and
hands it to ``pytest_evals_write_outputs``; the terminal, the result files and the
HTML report reach it with :func:`get_run_report`. Outputs read the run from here, not
from the aggregator (a pytest plugin with its own life), so they need nothing else of
the controller.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_evals.controller.result_spool import ResultSpool
    from pytest_evals.controller.suite_verdict import SuiteSummary
    from pytest_evals.model.case_result import CaseResult

RUN_REPORT_KEY = pytest.StashKey["RunReport"]()


def get_run_report(config: pytest.Config) -> RunReport | None:
    """This run's report: None on an xdist worker, before session finish, or when no
    suite case ran."""
    return config.stash.get(RUN_REPORT_KEY, None)


def group_by_suite(results: Iterable[CaseResult]) -> dict[str, list[CaseResult]]:
    """Results per suite id, each suite's in case order."""
    grouped: dict[str, list[CaseResult]] = defaultdict(list)
    for result in results:
        grouped[result.suite].append(result)
    for suite_results in grouped.values():
        suite_results.sort(key=lambda r: (r.index, r.case_id))
    return dict(grouped)


@dataclass
class RunReport:
    config: pytest.Config
    #: The JSON summary (the ``--evals-json`` document); writers may add sections.
    summary: dict[str, Any]
    #: Each suite's summary and verdict, in suite order (the objects behind ``summary["suites"]``).
    suites: list[SuiteSummary]
    #: Run-level notes (overrides that reached no suite).
    warnings: list[str]
    #: Why the exit status is 0 although cases failed (within their gates), if so.
    exit_note: str | None
    #: Every case's light result (no details), by node id, in arrival order.
    results: Mapping[str, CaseResult]
    spool: ResultSpool

    def results_by_suite(self) -> dict[str, list[CaseResult]]:
        """Light results per suite id, in case order."""
        return group_by_suite(self.results.values())

    def iter_full_results(self) -> Iterator[dict[str, Any]]:
        """Every case result with its details (JSON form), in arrival order: one pass over
        the spool on disk, so only for writers that need prompts and replies."""
        return iter(self.spool)
