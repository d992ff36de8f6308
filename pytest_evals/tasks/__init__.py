"""Registry of evaluation kinds, imported lazily so collection stays cheap."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from pytest_evals.errors import SuiteConfigError

if TYPE_CHECKING:
    from pytest_evals.tasks.base import Task

#: task name -> "module:Class". Users add their own with :func:`register_task`.
TASKS: dict[str, str] = {
    "jailbreak_guardrails": "pytest_evals.classification.task:JailbreakGuardrails",
    "output_guardrails": "pytest_evals.classification.task:OutputGuardrails",
    "question_router": "pytest_evals.classification.task:QuestionRouter",
    "retrieval": "pytest_evals.classification.retrieval:Retrieval",
    "topic_tagger": "pytest_evals.classification.topic_tagger:TopicTagger",
    "rag_answers": "pytest_evals.rag.task:RagAnswers",
    "halueval": "pytest_evals.tasks.halueval:HaluEval",
    "harpia": "pytest_evals.tasks.harpia:Harpia",
    "redteam": "pytest_evals.tasks.redteam:RedTeam",
}


def register_task(name: str, target: str | type[Task]) -> None:
    """Make ``task: name`` available in suite files (a class or "module:Class")."""
    if isinstance(target, str):
        TASKS[name] = target
    else:
        TASKS[name] = f"{target.__module__}:{target.__qualname__}"


def get_task_class(name: str, where: str = "") -> type[Task]:
    spec = TASKS.get(name)
    prefix = f"{where}: " if where else ""
    if spec is None:
        raise SuiteConfigError(f"{prefix}unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}")
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SuiteConfigError(f"{prefix}task {name!r} cannot be loaded: {exc}") from exc
    cls: type[Task] = getattr(module, attr)
    return cls
