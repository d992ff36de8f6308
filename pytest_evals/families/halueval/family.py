"""The HaluEval family's registration (entry point group ``pytest_evals.families``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TASKS = {"halueval": "pytest_evals.families.halueval.task:HaluEval"}
COMMANDS = ("pytest_evals.families.halueval.cli",)
#: ``hf_dataset:`` reads the benchmark through Hugging Face datasets: the 'hf' extra.
EXTRAS = {"datasets": "hf"}
#: The judged label of a HaluEval item that is a hallucination.
LABEL_WORDS = ("hallucinated",)
#: ``pytest-evals compare`` breaks two HaluEval runs down by task type by default.
GROUP_FIELDS = {"halueval": "task_type"}


def progress_group(result: Mapping[str, Any]) -> tuple[str, str] | None:
    """Running accuracy per HaluEval task type (qa, dialogue, summarization, general)."""
    if result.get("task") != "halueval":
        return None
    data = result.get("data")
    task_type = data.get("task_type") if isinstance(data, Mapping) else None
    return (task_type, "acc") if isinstance(task_type, str) else None
