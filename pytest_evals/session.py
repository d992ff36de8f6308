"""Former home of the session state, split into the worker-side
:class:`~pytest_evals.caserunner.CaseRunner` (every process that runs items) and the
controller-only :class:`~pytest_evals.aggregator.Aggregator`. Kept for code written
against the old names; new code imports those modules.
"""

from __future__ import annotations

import pytest

from pytest_evals.caserunner import CaseRunner, get_runner
from pytest_evals.engine import Engine

#: Former name of the per-process runner (what ``get_state`` returns).
EvalSession = CaseRunner


def get_state(config: pytest.Config) -> CaseRunner:
    return get_runner(config)


def get_engine(config: pytest.Config) -> Engine:
    """The session's event loop thread (shared with the LLM client and fixtures)."""
    return get_runner(config).engine
