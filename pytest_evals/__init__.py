"""pytest_evals: LLM evaluations as pytest test suites.

This package is the core, which knows no task family. It owns, bottom up: the values
and statistics (``models``, ``results``, ``aggregate``, ``stats``, ``gates``), reading
suite files and cases (``suite``, ``suitecache``, ``jsonl``, ``collect``,
``partition``), running a case on a worker (``caserunner``, ``runner``, ``engine``,
``targets``), the controller-only ``aggregator`` and its typed ``summary``, the one
output layer (``outputs``, ``terminal``), the family registry (``families``), the
project's hooks (``hookspecs``) and the plugin wiring (``plugin``). Families live in
their own packages (``classification``, ``rag``, ``halueval``, ``harpia``,
``redteam``), as do the LLM layer (``llm``), metrics (``metrics``), regression gates
(``regression``), reports (``reports``) and test helpers (``testing``).

The public API is what ``__all__`` lists, plus the names task families export
(``EXPORTS`` in a family module). Names are resolved lazily so that importing the
package (which pytest does for every run, through the plugin) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # writing your own tests
    "cases": "pytest_evals.collection.cases_marker",
    # extending: new tasks, results, metrics
    "Task": "pytest_evals.tasks.task_contract",
    "CaseRef": "pytest_evals.tasks.task_contract",
    "register_task": "pytest_evals.tasks",
    "CaseResult": "pytest_evals.model.case_result",
    "Metric": "pytest_evals.model.metric_value",
    "SuiteConfig": "pytest_evals.suites.suite_config",
    "EvalContext": "pytest_evals.tasks.eval_context",
    # errors that decide how a case is reported
    "CaseInputError": "pytest_evals.model.errors",
    "InfrastructureError": "pytest_evals.model.errors",
    "JudgeError": "pytest_evals.model.errors",
    "TargetError": "pytest_evals.model.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif name.startswith("__"):
        # Probes for dunders (copy, pickle, inspect) must not load the families.
        raise AttributeError(f"module 'pytest_evals' has no attribute {name!r}")
    else:
        # A name a task family exports (EXPORTS in its family module).
        from pytest_evals.registry.family_registry import family_export

        value = family_export(name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    from pytest_evals.registry.family_registry import registry

    return sorted({*__all__, *registry().exports})
