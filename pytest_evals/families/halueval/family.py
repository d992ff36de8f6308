"""The HaluEval family's registration (entry point ``pytest_evals.registry.family_registry``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TASKS = {"halueval": ("pytest_evals.families.halueval.task:HaluEval", "pytest_evals.tasks.halueval:HaluEval")}
COMMANDS = ("pytest_evals.families.halueval.cli", "pytest_evals.tasks.halueval_cli")


def progress_group(result: Mapping[str, Any]) -> tuple[str, str] | None:
    """Running accuracy per HaluEval task type (qa, dialogue, summarization, general)."""
    if result.get("task") != "halueval":
        return None
    data = result.get("data")
    task_type = data.get("task_type") if isinstance(data, Mapping) else None
    return (task_type, "acc") if isinstance(task_type, str) else None
