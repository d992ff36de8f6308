"""One case to evaluate, as the worker takes it: no pytest item, only what evaluation needs.

Collection builds a job per case item (:mod:`pytest_evals.collection.suite_items`) and the
worker evaluates jobs (:mod:`pytest_evals.worker.case_runner`), so neither knows the other's
classes; the job sits below both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_evals.model.case_ref import CaseRef
    from pytest_evals.tasks.task_contract import Task


@dataclass(frozen=True, slots=True)
class CaseJob:
    #: The case item's node id: results and prefetching are keyed by it.
    nodeid: str
    task: Task[Any]
    ref: CaseRef
    #: Position of the case in its suite (results are ordered by it).
    index: int
