"""The seed's helper interface (``viz_utils``), in one importable place.

Runners call these to write runs the viewer reads::

    from pytest_evals.families.redteam.helpers import save_system_prompt_stats

    save_system_prompt_stats(
        run_path=Path("data") / "evo" / "my_run",
        seed_id=0,
        system_prompt="You are a helpful assistant.",
        attacks=attacks,  # dicts, schema models or dataclasses with the same fields
        meta={"step": 3, "operation": "mutate"},
    )
"""

from __future__ import annotations

from pytest_evals.families.redteam.convert import convert_attack_to_dict, hash_system_prompt
from pytest_evals.families.redteam.loader import (
    LoadIssue,
    RunData,
    find_runs,
    load_data_dir,
    load_run_dir,
)
from pytest_evals.families.redteam.scoring import (
    adversariality,
    attack_adversarial_score,
    compute_adversarial_score,
    normalize,
    score_stats,
)
from pytest_evals.families.redteam.store import (
    atomic_write_json,
    merge_system_prompt_attacks,
    save_cluster_info,
    save_population_state,
    save_system_prompt_stats,
)

__all__ = [
    "LoadIssue",
    "RunData",
    "adversariality",
    "atomic_write_json",
    "attack_adversarial_score",
    "compute_adversarial_score",
    "convert_attack_to_dict",
    "find_runs",
    "hash_system_prompt",
    "load_data_dir",
    "load_run_dir",
    "merge_system_prompt_attacks",
    "normalize",
    "save_cluster_info",
    "save_population_state",
    "save_system_prompt_stats",
    "score_stats",
]
