"""The red-team family's pytest hooks: its run store written through the output layer.

Cases only compute; the controller writes ``<output_dir>/<runner>/<run>/seed_*/*.json``
in ``pytest_evals_write_outputs``, after the exit status is decided, so an xdist run
has one writer as a plain run does. The baseline's attacks are computed in one process:
a worker sends them in ``config.workeroutput`` and the controller gathers them in
``pytest_testnodedown`` (xdist's documented channel for per-worker data).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.controller.artifact_writers import names_artifact
from pytest_evals.families.redteam.writer import TASK, StoreRecord, StoreWritten

if TYPE_CHECKING:
    from pytest_evals.controller.run_report import RunReport

#: Baseline records this process computed, plus (on the controller) the workers' records.
_BASELINES = pytest.StashKey[list[StoreRecord]]()
_WRITTEN = pytest.StashKey[StoreWritten]()
WORKEROUTPUT_KEY = "pytest_evals_redteam_baselines"


def record_baseline(config: pytest.Config, record: StoreRecord) -> None:
    """Keep a baseline's attacks for the controller's writer (called where it was computed)."""
    config.stash.setdefault(_BASELINES, []).append(record)


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    records = session.config.stash.get(_BASELINES, [])
    if workeroutput is not None and records:
        workeroutput[WORKEROUTPUT_KEY] = [r.to_json() for r in records]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    data = getattr(node, "workeroutput", {}).get(WORKEROUTPUT_KEY)
    if data:
        node.config.stash.setdefault(_BASELINES, []).extend(StoreRecord.from_json(d) for d in data)


# tryfirst: the run folder's copy of the summary names the store too.
@pytest.hookimpl(optionalhook=True, tryfirst=True)
@names_artifact("red-team run store")
def pytest_evals_write_outputs(config: pytest.Config, summary: dict[str, Any], report: RunReport) -> None:
    baselines = config.stash.get(_BASELINES, [])
    # Reading every case's details back costs a pass over the spool: only for red-team runs.
    if not baselines and not any(r.task == TASK for r in report.results.values()):
        return
    from pytest_evals.families.redteam.writer import case_records, write_store

    written = write_store([*baselines, *case_records(report.iter_full_results())])
    if not written.run_paths and not written.errors:
        return
    config.stash[_WRITTEN] = written
    summary["redteam"] = {"run_paths": written.run_paths, "errors": written.errors}


@pytest.hookimpl(optionalhook=True)
def pytest_evals_terminal_summary(config: pytest.Config, terminalreporter: pytest.TerminalReporter) -> None:
    written = config.stash.get(_WRITTEN, None)
    if written is None:
        return
    for path in written.run_paths:
        terminalreporter.write_line(f"red-team run: {path}")
    for error in written.errors:
        terminalreporter.write_line(f"ERROR red-team run not written: {error}", red=True, bold=True)
