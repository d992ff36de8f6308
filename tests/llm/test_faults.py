"""Retries, Retry-After, deadlines and the errors left after them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from pytest_evals.llm import LLMClient, LLMError
from pytest_evals.llm.retry import AttemptError, Backoff, parse_retry_after
from pytest_evals.model.errors import InfrastructureError
from pytest_evals.testing.fake_openai import FakeOpenAI, last_user_message

from .conftest import closing, run

MakeClient = Callable[..., LLMClient]


@pytest.mark.parametrize("transport", ["process", "aiohttp", "lean", "openai"])
def test_mixed_faults_all_answered_correctly(
    make_client: MakeClient, server: FakeOpenAI, transport: str
) -> None:
    """10% 429 + 5% 500 + 2% malformed + 1% hang: every request still gets its own answer."""
    server.configure(
        latency=0.01,
        rate_429=0.10,
        rate_500=0.05,
        rate_malformed=0.02,
        rate_hang=0.01,
        retry_after=0.05,
        seed=11,
    )
    client = make_client(transport=transport, timeout=1.0, max_retries=8, concurrency=32)
    prompts = [f"question number {i}" for i in range(200 if transport == "aiohttp" else 120)]

    async def go() -> list[str]:
        replies = await asyncio.gather(*(client.chat(p, namespace="t") for p in prompts))
        return [r.text for r in replies]

    started = time.monotonic()
    assert run(closing(client, go())) == prompts
    outcomes = server.stats()["outcomes"]
    # An answer can reach a client that stopped waiting for it (its 1 s deadline passed on
    # a loaded machine): the server counts one more "ok" and the client sends again.
    late = outcomes["ok"] - len(prompts)
    assert 0 <= late <= len(prompts) // 10, outcomes
    # Every kind of fault really happened, and was retried.
    assert min(outcomes.get(k, 0) for k in ("429", "500", "malformed", "hang")) >= 1, outcomes
    # Every attempt the server saw beyond one per prompt is a retry or a resend the
    # client counted: none unaccounted for, none invented.
    assert client.stats.retries + client.stats.outage_resends == sum(outcomes.values()) - len(prompts)
    assert client.stats.errors == 0
    assert time.monotonic() - started < 30


def test_retry_after_is_honoured(make_client: MakeClient, server: FakeOpenAI) -> None:
    server.configure(fail_first=1, fail_status=429, retry_after=0.6)
    client = make_client()
    started = time.monotonic()
    assert run(closing(client, client.chat("wait for me", namespace="t"))).text == "wait for me"
    assert time.monotonic() - started >= 0.6
    assert client.stats.throttled == 1


@pytest.mark.parametrize("transport", ["process", "aiohttp", "lean", "openai"])
def test_failure_after_retries_names_the_cause(
    make_client: MakeClient, server: FakeOpenAI, transport: str
) -> None:
    server.configure(rate_500=1.0)
    client = make_client(max_retries=2, transport=transport)
    with pytest.raises(LLMError) as info:
        run(closing(client, client.chat("doomed", namespace="t")))
    assert isinstance(info.value, InfrastructureError)
    assert "failed after 3 attempts" in str(info.value)
    assert "HTTP 500" in str(info.value) and info.value.status == 500
    assert server.stats()["received"] == 3
    assert client.stats.errors == 1


def test_client_errors_are_not_retried(make_client: MakeClient, server: FakeOpenAI) -> None:
    server.configure(fail_first=100, fail_status=400)
    client = make_client(max_retries=5)
    with pytest.raises(LLMError, match="HTTP 400"):
        run(closing(client, client.chat("bad request", namespace="t")))
    assert server.stats()["received"] == 1


@pytest.mark.parametrize("transport", ["process", "aiohttp", "lean", "openai"])
def test_hang_ends_at_the_deadline(
    make_client: MakeClient, server: FakeOpenAI, transport: str
) -> None:
    """A server that never answers costs (retries + 1) x timeout, then a clear error."""
    server.configure(rate_hang=1.0)
    client = make_client(timeout=0.4, max_retries=1, transport=transport)

    async def go() -> float:
        # Set up first, as collection does for a run: the process transport's helper
        # start is not part of a request's deadline.
        await client.prepare()
        started = time.monotonic()
        with pytest.raises(LLMError, match=r"no complete reply within 0.4s"):
            await client.chat("hello?", namespace="t")
        return time.monotonic() - started

    assert run(closing(client, go())) < 0.4 * 2 + 1.5


def test_connection_refused_is_an_error_not_a_hang(make_client: MakeClient) -> None:
    client = make_client(configured_base_url="http://127.0.0.1:9/v1", max_retries=1)
    with pytest.raises(LLMError, match="connection error"):
        run(closing(client, client.chat("anyone?", namespace="t")))


def test_other_requests_continue_when_one_fails(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    """One request fails for good (the server errors on it, no retries left) while three
    others are in flight with it: they still get their answers, the failure is its own."""

    def responder(request: dict[str, Any]) -> str:
        text = last_user_message(request)
        if text == "poison":
            raise RuntimeError("this prompt breaks the server")
        return text

    server.configure(responder=responder, latency=0.2)
    client = make_client(max_retries=0)

    async def go() -> list[object]:
        return await asyncio.gather(
            *(client.chat(p, namespace="t") for p in ["a", "poison", "b", "c"]),
            return_exceptions=True,
        )

    results = run(closing(client, go()))
    assert [getattr(r, "text", None) for r in results] == ["a", None, "b", "c"]
    failure = results[1]
    assert isinstance(failure, LLMError) and "HTTP 500" in str(failure), failure
    stats = server.stats()
    assert stats["outcomes"] == {"ok": 3, "responder_error": 1}, stats["outcomes"]
    assert stats["max_in_flight"] == 4  # the four were really concurrent
    assert client.stats.errors == 1


def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "1"}) == 0.25
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({}) is None


def test_backoff_bounds() -> None:
    backoff = Backoff(base=0.25, cap=20.0, max_wait=60.0)
    plain = AttemptError("x", retryable=True)
    for attempt in range(1, 12):
        delay = backoff.delay(attempt, plain)
        ceiling = min(20.0, 0.25 * 2 ** (attempt - 1))
        assert ceiling / 2 <= delay <= ceiling
    told = AttemptError("x", retryable=True, status=429, retry_after=1.0)
    assert 1.0 <= backoff.delay(1, told) <= 1.2
    assert backoff.delay(1, AttemptError("x", retryable=True, retry_after=1e6)) == 60.0
