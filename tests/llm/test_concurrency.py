"""In-flight limits, de-duplication and determinism across concurrency settings."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from pytest_evals.llm import LLMClient
from pytest_evals.llm.limiter import AdaptiveLimiter
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import closing, run

MakeClient = Callable[..., LLMClient]


@pytest.mark.parametrize("transport", ["process", "aiohttp", "lean", "openai"])
def test_reaches_configured_concurrency(
    make_client: MakeClient, server: FakeOpenAI, transport: str
) -> None:
    server.configure(latency=0.3)
    client = make_client(concurrency=16, transport=transport)

    async def go() -> None:
        await asyncio.gather(*(client.chat(f"q{i}", namespace="t") for i in range(48)))

    run(closing(client, go()))
    stats = server.stats()
    assert stats["answered"] == 48
    assert stats["max_in_flight"] == 16  # reached, never exceeded
    assert client.stats.peak_in_flight == 16


def test_identical_concurrent_requests_share_one_call(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    server.configure(latency=0.1)
    client = make_client()

    async def go() -> list[str]:
        replies = await asyncio.gather(
            *(client.chat("same question", namespace="t") for _ in range(20))
        )
        return [r.text for r in replies]

    assert run(closing(client, go())) == ["same question"] * 20
    assert server.stats()["received"] == 1
    assert client.stats.requests == 1 and client.stats.cache_hits == 19


def test_results_identical_at_concurrency_1_and_64(
    make_client: MakeClient, server: FakeOpenAI, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    server.configure(responder="model-echo", rate_500=0.1, seed=7)
    prompts = [f"case {i}" for i in range(60)]

    def collect(concurrency: int, where: str) -> list[tuple[str, int, int]]:
        client = make_client(concurrency=concurrency, cache_dir=tmp_path / where)

        async def go() -> list[tuple[str, int, int]]:
            replies = await asyncio.gather(*(client.chat(p, namespace="t") for p in prompts))
            return [(r.text, r.prompt_tokens, r.completion_tokens) for r in replies]

        return run(closing(client, go()))

    assert collect(1, "c1") == collect(64, "c64")


def test_limiter_halves_on_throttle_and_recovers() -> None:
    async def go() -> None:
        limiter = AdaptiveLimiter(32, cooldown=0.0)
        limiter.on_throttle()
        assert limiter.current == 16
        limiter.on_throttle()
        assert limiter.current == 8 and limiter.lowest == 8
        for _ in range(2000):
            limiter.on_success()
        assert limiter.current == 32

    run(go())


def test_limiter_cooldown_counts_a_burst_once() -> None:
    limiter = AdaptiveLimiter(32, cooldown=60.0)
    for _ in range(10):
        limiter.on_throttle()
    assert limiter.current == 16


def test_limiter_never_exceeds_limit_and_wakes_waiters() -> None:
    async def go() -> int:
        limiter = AdaptiveLimiter(4)
        peak = 0
        active = 0

        async def worker() -> None:
            nonlocal peak, active
            await limiter.acquire()
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.01)
            active -= 1
            limiter.release()

        await asyncio.gather(*(worker() for _ in range(40)))
        assert limiter.in_flight == 0
        return peak

    assert run(go()) == 4


def test_throttling_lowers_concurrency_then_recovers(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    server.configure(latency=0.05, rate_429=0.5, retry_after=0.05, seed=1)
    client = make_client(concurrency=16, max_retries=12)

    async def go() -> None:
        await asyncio.gather(*(client.chat(f"t{i}", namespace="t") for i in range(120)))

    run(closing(client, go()))
    assert client.stats.throttled > 0
    assert client.stats.lowest_concurrency < 16
    assert client.stats.requests == 120


def test_limiter_slow_start_doubles_per_round_trip_of_quick_replies() -> None:
    limiter = AdaptiveLimiter(64, deadline=60.0, initial=8)
    assert limiter.current == 8
    for _ in range(8):
        limiter.on_success(10.0)  # within a quarter of the deadline, but not by far
    assert limiter.current == 16  # one round trip of quick replies: doubled
    for _ in range(48):
        limiter.on_success(10.0)
    assert limiter.current == 64 and not limiter.slow_start


def test_limiter_slow_start_jumps_to_what_even_a_serial_server_answers_in_time() -> None:
    """A reply in t seconds bounds one request's work at t: deadline / (4 t) requests in
    flight end within a quarter of the deadline even if the server works one at a time."""
    fast = AdaptiveLimiter(64, deadline=60.0, initial=8)
    fast.on_success(0.1)  # 60 / 0.4 = 150 >= 64: at full concurrency after one reply
    assert fast.current == 64 and not fast.slow_start
    some = AdaptiveLimiter(64, deadline=60.0, initial=8)
    some.on_success(1.0)  # 60 / 4 = 15
    assert some.current == 15 and some.slow_start
    some.on_success(1.0)
    assert some.current == 16  # then one per reply, as before
    slow = AdaptiveLimiter(64, deadline=2.0, initial=8)
    slow.on_success(0.15)  # 2 / 0.6 = 3.3: below the limit, so only the usual +1
    assert slow.current == 9


def test_limiter_shrinks_when_replies_near_the_deadline() -> None:
    limiter = AdaptiveLimiter(64, deadline=10.0, cooldown=0.0, initial=8)
    limiter.on_success(3.0)  # past a quarter of the deadline: growth stops
    assert limiter.current == 8 and not limiter.slow_start
    limiter.on_success(8.0)  # past half: shrink in proportion (5/8 of 8)
    assert limiter.current == 5 and limiter.lowest == 5


def test_limiter_timeout_falls_to_what_the_server_sustained() -> None:
    limiter = AdaptiveLimiter(64, deadline=60.0, cooldown=0.0)
    for _ in range(6):  # six replies within the last deadline
        limiter.on_success(1.0)
    limiter.on_overload()
    assert limiter.current == 3  # Little's law: half of what completed in one deadline
    limiter.on_overload()  # another burst of timeouts: halved again
    assert limiter.current == 1


def test_single_slot_server_at_high_concurrency_loses_no_request(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    """A server that works one request at a time (llama.cpp with one slot) queues every
    request it is sent, and each queued request's deadline runs while it waits. At 64 in
    flight with a 2 s deadline and 0.15 s of work each, a client that sends the whole
    window at once times out most of it and retries into a queue still busy with the
    abandoned work; the latency-aware limiter keeps the queue short enough instead."""
    server.configure(latency=0.15, slots=1)
    client = make_client(concurrency=64, timeout=2.0, max_retries=2)

    async def go() -> None:
        await asyncio.gather(*(client.chat(f"s{i}", namespace="t") for i in range(40)))

    run(closing(client, go()))
    assert client.stats.errors == 0
    assert server.stats()["answered"] == 40
    assert client.stats.lowest_concurrency < 64
