"""The assertions family's registration (entry point group ``pytest_evals.families``)."""

from __future__ import annotations

TASKS = {"assertions": "pytest_evals.families.assertions.task:AssertionsTask"}
#: A case's id in ``pytest-evals compare`` groups: its first failing assertion is in the
#: details; cases group by nothing else by default.
GROUP_FIELDS: dict[str, str] = {}
