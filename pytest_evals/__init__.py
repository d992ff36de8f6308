"""pytest_evals: LLM evaluations as pytest test suites."""

from __future__ import annotations

__version__ = "0.1.0"

__all__: list[str] = ["__version__"]
