"""The red-team family: ``task: redteam``, the run visualization schema, scoring, storage and viewer.

Owns the task class (:mod:`.task`), the schema models (:mod:`.schema`), adversarial
scoring (:mod:`.scoring`), the rm-bias-compatible helpers (:mod:`.helpers`), reading and
writing runs (:mod:`.loader`, :mod:`.store`), the run store a suite writes at the end of
the run (:mod:`.writer`, wired by :mod:`.plugin` through ``pytest_evals_write_outputs``),
the ``pytest-evals viz`` subcommand (:mod:`.cli`, :mod:`.viewer`, :mod:`.live`) and
docs/redteam.md. This module imports nothing: its names resolve on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_evals.families.redteam.helpers import (
        adversariality,
        convert_attack_to_dict,
        hash_system_prompt,
        load_data_dir,
        load_run_dir,
        save_cluster_info,
        save_population_state,
        save_system_prompt_stats,
    )
    from pytest_evals.families.redteam.schema import (
        Attack,
        RatedResponse,
        RaterInfo,
        Rating,
        SystemPromptStats,
    )

# Resolved on first use: every pytest run imports this package (the family's
# registration module lives in it), and the helpers pull pydantic.
_SCHEMA = ("Attack", "RatedResponse", "RaterInfo", "Rating", "SystemPromptStats")

__all__ = [
    "Attack",
    "RatedResponse",
    "RaterInfo",
    "Rating",
    "SystemPromptStats",
    "adversariality",
    "convert_attack_to_dict",
    "hash_system_prompt",
    "load_data_dir",
    "load_run_dir",
    "save_cluster_info",
    "save_population_state",
    "save_system_prompt_stats",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'pytest_evals.families.redteam' has no attribute {name!r}")
    module = "pytest_evals.families.redteam.schema" if name in _SCHEMA else "pytest_evals.families.redteam.helpers"
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
