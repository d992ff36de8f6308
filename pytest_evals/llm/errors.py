"""Errors raised by the LLM layer.

``LLMError`` is an infrastructure error: the case becomes an ERROR (never a FAIL) and is
counted apart in the summary. ``DryRunSkip`` is what ``--evals-dry-run`` raises instead
of making a paid request; it is a pytest skip, so a case or a user's test that reaches
an uncached request is reported as skipped with the estimate in its reason.
"""

from __future__ import annotations

import pytest

from pytest_evals.errors import InfrastructureError


class LLMError(InfrastructureError):
    """A model request failed after its retries (or cannot be made at all).

    The message names the cause (HTTP status, timeout, connection error, malformed
    body) and never contains the API key.
    """

    kind = "infrastructure"

    def __init__(self, message: str, *, cause: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.cause = cause
        self.status = status


class OfflineError(LLMError):
    """A model call was attempted but no endpoint is configured (offline mode)."""


class DryRunSkip(pytest.skip.Exception):  # type: ignore[name-defined,misc]
    """``--evals-dry-run``: this request is not cached, so it was counted, not sent."""

    def __init__(self, message: str, *, prompt_tokens: int, completion_tokens: int, cost: float | None) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.cost = cost
