"""The red-team family's registration (entry point ``pytest_evals.families``)."""

from __future__ import annotations

TASKS = {"redteam": ("pytest_evals.redteam.task:RedTeam", "pytest_evals.tasks.redteam:RedTeam")}
COMMANDS = ("pytest_evals.redteam.cli",)
#: The run store, written by the controller through ``pytest_evals_write_outputs``.
PLUGINS = ("pytest_evals.redteam.plugin",)
