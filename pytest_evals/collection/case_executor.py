"""Who evaluates the case items this process runs: the worker registers itself here.

Collection sits below the worker: a case item asks the executor in the config's stash for
its result instead of importing the worker (the plugin puts the worker's case runner there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import pytest

if TYPE_CHECKING:
    from pytest_evals.model.case_result import CaseResult
    from pytest_evals.tasks.case_job import CaseJob


class CaseExecutor(Protocol):
    def warm_up(self) -> None:
        """A suite file is being collected: start what evaluation will need."""

    def result_for(self, job: CaseJob, upcoming: Sequence[object]) -> CaseResult:
        """The result of ``job``; ``upcoming`` is the session's item list (what may be
        evaluated ahead of it: items with an ``evals_job`` attribute)."""
        ...


EXECUTOR_KEY = pytest.StashKey[CaseExecutor]()


def get_executor(config: pytest.Config) -> CaseExecutor:
    return config.stash[EXECUTOR_KEY]
