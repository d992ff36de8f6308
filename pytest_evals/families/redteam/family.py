"""The red-team family's registration (entry point group ``pytest_evals.families``)."""

from __future__ import annotations

TASKS = {"redteam": "pytest_evals.families.redteam.task:RedTeam"}
COMMANDS = ("pytest_evals.families.redteam.cli", "pytest_evals.families.redteam.attribute_stats_cli")
#: The run store, written by the controller through ``pytest_evals_write_outputs``.
PLUGINS = ("pytest_evals.families.redteam.plugin",)
#: rm-bias's run visualization helpers as ``from pytest_evals import ...`` (seed 004's interface).
EXPORTS = {
    name: f"pytest_evals.families.redteam.helpers:{name}"
    for name in (
        "hash_system_prompt",
        "convert_attack_to_dict",
        "save_system_prompt_stats",
        "save_cluster_info",
        "save_population_state",
        "adversariality",
        "load_run_dir",
        "load_data_dir",
    )
}
