"""The red-team family's registration (entry point ``pytest_evals.registry.family_registry``)."""

from __future__ import annotations

TASKS = {"redteam": ("pytest_evals.families.redteam.task:RedTeam", "pytest_evals.tasks.redteam:RedTeam")}
COMMANDS = ("pytest_evals.families.redteam.cli",)
#: The run store, written by the controller through ``pytest_evals_write_outputs``.
PLUGINS = ("pytest_evals.families.redteam.plugin",)
