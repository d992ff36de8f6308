"""The assertions family's registration (entry point group ``pytest_evals.families``)."""

from __future__ import annotations

TASKS = {"assertions": "pytest_evals.families.assertions.task:AssertionsTask"}
