"""Red-team runs: the run visualization schema, adversarial scoring, storage and viewer.

The public helpers live in :mod:`pytest_evals.redteam.helpers`; the schema models in
:mod:`pytest_evals.redteam.schema`. This package imports nothing heavy.
"""

from __future__ import annotations

from pytest_evals.redteam.helpers import (
    adversariality,
    convert_attack_to_dict,
    hash_system_prompt,
    load_data_dir,
    load_run_dir,
    save_cluster_info,
    save_population_state,
    save_system_prompt_stats,
)
from pytest_evals.redteam.schema import (
    Attack,
    RatedResponse,
    RaterInfo,
    Rating,
    SystemPromptStats,
)

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
