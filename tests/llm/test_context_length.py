"""A request longer than the model's context is its own error kind, with the prompt's
token count and the model's limit, sent once (a retry cannot make it fit)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_evals.llm import LLMClient
from pytest_evals.llm.call_errors import ContextLengthError
from pytest_evals.llm.client import context_overflow
from pytest_evals.llm.retry import AttemptError
from pytest_evals.model.errors import ErrorKind, error_kind
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import closing, run


@pytest.mark.parametrize(
    ("message", "limit"),
    [
        ("This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.", 8192),
        ("Requested tokens (2100) exceed context window of 2048", 2048),
        ("the request exceeds the available context size, try increasing it", 0),
        ('{"error": {"code": "context_length_exceeded"}}', 0),
    ],
)
def test_the_servers_ways_of_saying_it(message: str, limit: int) -> None:
    assert context_overflow(AttemptError(f"HTTP 400: {message}", retryable=False, status=400)) == limit


def test_other_errors_are_not_context_overflow() -> None:
    assert context_overflow(AttemptError("HTTP 400: invalid model", retryable=False, status=400)) is None
    assert context_overflow(AttemptError("HTTP 500: context window", retryable=True, status=500)) is None


def test_an_overlong_request_is_a_context_length_error_sent_once(
    make_client: Callable[..., LLMClient], server: FakeOpenAI
) -> None:
    server.configure(max_context=50)
    client = make_client()

    async def go() -> None:
        await client.chat("short", namespace="t")  # fits
        await client.chat("a long question " * 60, namespace="t", max_tokens=16)

    with pytest.raises(ContextLengthError) as info:
        run(closing(client, go()))
    err = info.value
    assert error_kind(err) is ErrorKind.CONTEXT_LENGTH
    assert err.limit == 50 and err.prompt_tokens > 50
    assert "longer than the model's context" in str(err) and "limit 50 tokens" in str(err)
    assert "max_tokens 16" in str(err)
    assert server.stats()["received"] == 2  # not retried
