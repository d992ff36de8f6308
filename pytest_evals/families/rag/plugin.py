"""The RAG family's pytest hooks: DeepEval's telemetry off before its own plugin reports.

DeepEval installs a pytest plugin that starts a telemetry scope at session start (and
writes an identity file in the home folder) unless its opt-out variable is set; our
DeepEval metrics set it when they first load DeepEval, which is too late for that. So
when DeepEval is installed, every pytest_evals session opts out at configure time,
before any session starts (xdist workers inherit the variable). Nothing is imported.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

#: Telemetry and the update check: the variables that must be set before session start.
EARLY_ENV: dict[str, str] = {"DEEPEVAL_TELEMETRY_OPT_OUT": "1", "DEEPEVAL_UPDATE_WARNING_OPT_IN": "0"}


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    try:
        installed = importlib.util.find_spec("deepeval") is not None
    except (ImportError, ValueError):
        installed = False
    if installed:
        os.environ.update(EARLY_ENV)
