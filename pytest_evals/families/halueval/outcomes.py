"""HaluEval runs' per-item outcomes: the core's one reader of earlier runs
(:mod:`pytest_evals.output.run_reader`), grouped by HaluEval task type."""

from __future__ import annotations

from pathlib import Path

from pytest_evals.output.run_reader import (
    RESULTS_FILE,
    ItemOutcome,
    Pair,
    RunFileError,
    RunOutcomes,
    pair,
    read_run,
)
from pytest_evals.output.run_reader import load_outcomes as _load_outcomes

__all__ = ["RESULTS_FILE", "ItemOutcome", "Pair", "RunFileError", "RunOutcomes", "load_outcomes", "pair", "read_run"]


def load_outcomes(path: Path, suite: str | None = None) -> RunOutcomes:
    """Outcomes of one HaluEval run, each item grouped by its ``task_type``."""
    return _load_outcomes(path, suite, group_by="task_type")
