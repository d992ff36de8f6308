"""The client reads what a server publishes about itself (llama.cpp's /props, vLLM's
/v1/models) and fits itself to it; a request's deadline runs only on the wire."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from pytest_evals.llm import LLMClient
from pytest_evals.llm.call_errors import ContextLengthError
from pytest_evals.llm.endpoint_probe import (
    probe_endpoint_sync,
    read_models,
    read_props,
    server_root,
)
from pytest_evals.llm.limiter import AdaptiveLimiter
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import closing, run

MakeClient = Callable[..., LLMClient]


def test_readers_take_the_published_fields_and_ignore_the_rest() -> None:
    # llama.cpp: total_slots and the slot's context.
    assert read_props(
        {"total_slots": 4, "default_generation_settings": {"n_ctx": 8192}, "chat_template": "x"}
    ) == (4, 8192)
    # vLLM: max_model_len per model; llama.cpp's C++ server: meta.n_ctx_train.
    assert read_models({"data": [{"id": "m", "max_model_len": 4096}]}) == (("m",), 4096)
    assert read_models({"data": [{"id": "a", "meta": {"n_ctx_train": 2048}}, {"id": "b"}]}) == (
        ("a", "b"),
        2048,
    )
    # Hostile or absent values are unknown, never a crash or a zero.
    assert read_props({"total_slots": "many", "default_generation_settings": []}) == (None, None)
    assert read_props({"total_slots": True, "n_ctx": -1}) == (None, None)
    assert read_props(["not", "an", "object"]) == (None, None)
    assert read_models({"data": [{"id": 7}, "x", {"id": "ok", "max_model_len": 0}]}) == (("ok",), None)
    assert read_models(None) == ((), None)
    # A name that is huge, blank or carries control characters is not used.
    assert read_models({"data": [{"id": "x" * 5000}, {"id": " "}, {"id": "a\nb"}, {"id": "ok"}]}) == (
        ("ok",),
        None,
    )
    assert server_root("http://h:8080/v1/") == "http://h:8080"
    assert server_root("http://h/api/openai/v1") == "http://h/api/openai"


def test_llama_cpp_props_cap_the_concurrency_to_its_slots(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    """A server that says it works on two requests at once never gets more, whatever
    --evals-concurrency says: past its slots a request only waits with its deadline on."""
    server.configure(server_kind="llama.cpp", slots=2, max_context=2048, latency=0.05)
    client = make_client(concurrency=32)

    async def go() -> None:
        await asyncio.gather(*(client.chat(f"q{i}", namespace="t") for i in range(20)))

    run(closing(client, go()))
    stats = server.stats()
    assert stats["answered"] == 20 and client.stats.errors == 0
    assert stats["max_in_flight"] == 2, stats
    assert client.endpoint is not None
    assert (client.endpoint.slots, client.endpoint.context) == (2, 2048)
    assert client.endpoint.sources == ("/props",)
    # Asked once per client, not per request.
    assert stats["probes"] == {"models": 1, "props": 1}
    # Nothing was throttled: the lowest concurrency is the one used, never 0.
    assert client.stats.lowest_concurrency == 2


def test_slots_are_shared_among_xdist_workers(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    server.configure(server_kind="llama.cpp", slots=3)
    client = make_client(concurrency=32)
    client.processes = 2  # what the pytest wiring sets in each of two workers
    run(closing(client, client.chat("hi", namespace="t")))
    assert client.concurrency_cap() == 2  # ceil(3 / 2): each of two workers


def test_vllm_max_model_len_names_the_limit_when_the_server_does_not(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    server.configure(server_kind="vllm", served_models="served-7b", max_context=300)
    # The fake's 400 names its limit; this responder-free check replaces the message
    # with a bare one, as some servers send.
    client = make_client(concurrency=4)
    info = probe_endpoint_sync(server.base_url)
    assert info.reachable and info.models == ("served-7b",) and info.context == 300
    assert info.slots is None  # vLLM has no /props: a 404 is fine
    client.use_endpoint(info)
    with pytest.raises(ContextLengthError) as caught:
        run(closing(client, client.chat("word " * 400, namespace="t")))
    assert caught.value.limit == 300


def test_a_server_without_props_or_models_is_used_as_before(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    client = make_client(concurrency=32)
    reply = run(closing(client, client.chat("plain", namespace="t")))
    assert reply.text == "plain"
    assert client.endpoint is not None and client.endpoint.reachable
    assert (client.endpoint.slots, client.endpoint.context) == (None, None)
    assert client.concurrency_cap() is None


def test_the_deadline_starts_on_the_wire_not_in_our_queue(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    """Eight requests through one slot of ours, 0.3 s each on the server, with a 1 s
    deadline: the last one waits 2.1 s in the limiter and still succeeds at its first
    attempt (the queue's time is not the server's)."""
    server.configure(latency=0.3)
    client = make_client(concurrency=1, timeout=1.0, max_retries=0)

    async def go() -> float:
        started = time.monotonic()
        await asyncio.gather(*(client.chat(f"w{i}", namespace="t") for i in range(8)))
        return time.monotonic() - started

    took = run(closing(client, go()))
    assert took > 2.1  # the queue really was longer than the deadline
    assert client.stats.errors == 0 and client.stats.attempts == 8 and client.stats.retries == 0


def test_limiter_cap_never_raises_the_maximum() -> None:
    limiter = AdaptiveLimiter(8, initial=8)
    limiter.cap(16)
    assert limiter.maximum == 8 and limiter.current == 8
    limiter.cap(1)
    assert limiter.maximum == 1 and limiter.current == 1 and limiter.lowest == 1
    limiter.on_success(0.01)
    assert limiter.current == 1  # growth stops at the server's slots
