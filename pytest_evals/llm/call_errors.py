"""Errors raised by the LLM layer.

``LLMError`` is an infrastructure error: the case becomes an ERROR (never a FAIL) and is
counted apart in the summary. ``DryRunSkip`` is what ``--evals-dry-run`` raises instead
of making a paid request. It is both the core's ``SkipCase`` (a suite case is recorded
as skipped) and a pytest skip (a user's own test using the ``llm`` fixture is skipped),
with the estimate in its message.
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from pytest_evals.model.errors import ErrorKind, InfrastructureError, SkipCase


class LLMError(InfrastructureError):
    """A model request failed after its retries (or cannot be made at all).

    The message names the cause (HTTP status, timeout, connection error, malformed
    body) and never contains the API key.
    """

    def __init__(
        self, message: str, *, cause: str | None = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.cause = cause
        self.status = status


class ContextLengthError(LLMError):
    """The endpoint refused the request as longer than the model's context."""

    kind: ClassVar[ErrorKind] = ErrorKind.CONTEXT_LENGTH

    def __init__(
        self, message: str, *, prompt_tokens: int, limit: int | None, cause: str | None = None
    ) -> None:
        super().__init__(message, cause=cause, status=400)
        self.prompt_tokens = prompt_tokens
        self.limit = limit


class EndpointUnreachable(LLMError):
    """The endpoint stayed unreachable past ``--evals-outage-wait`` (or never answered in
    this run): every request after that fails at once with this same one-line reason."""


class OfflineError(LLMError):
    """A model call was attempted but no endpoint is configured (offline mode)."""


class DryRunSkip(SkipCase, pytest.skip.Exception):  # type: ignore[name-defined]
    """``--evals-dry-run``: this request is not cached, so it was counted, not sent."""

    def __init__(
        self, message: str, *, prompt_tokens: int, completion_tokens: int, cost: float | None
    ) -> None:
        SkipCase.__init__(self, message)
        pytest.skip.Exception.__init__(self, message)
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.cost = cost
