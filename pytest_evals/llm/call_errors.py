"""Errors raised by the LLM layer.

``LLMError`` is an infrastructure error: the case becomes an ERROR (never a FAIL) and is
counted apart in the summary. ``DryRunSkip`` is what ``--evals-dry-run`` raises instead
of making a paid request. It is both the core's ``SkipCase`` (a suite case is recorded
as skipped) and a pytest skip (a user's own test using the ``llm`` fixture is skipped),
with the estimate in its message.
"""

from __future__ import annotations

import re
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


#: How a refusal of ``response_format`` reads (OpenAI: "'response_format' of type
#: 'json_schema' is not supported"; llama-cpp-python: a 422 validation error on
#: response_format.type).
_FORMAT_WORDS = re.compile(r"response_format|json|schema|grammar|format", re.IGNORECASE)


def refuses_format(status: int | None, cause: str) -> bool:
    """Does an error reply (``status``, its text) refuse the request's ``response_format``?

    llama-cpp-python answers a format type it does not know with HTTP 500 and its own
    validation error ("response_format ... Input should be 'text' or 'json_object'"):
    a 500 like that is an answer, not a server failing, so it is not retried.
    """
    if status in (400, 422):
        return bool(_FORMAT_WORDS.search(cause))
    return status == 500 and "response_format" in cause


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
