"""The response cache: hits, misses, refresh, bypass, and what the key covers."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_evals.llm import LLMClient, LLMError
from pytest_evals.llm import cache as llm_cache
from pytest_evals.llm.cache import Claim, ResponseCache, claim_record
from pytest_evals.llm.secret import Secret
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import closing, run

MakeClient = Callable[..., LLMClient]


def test_miss_then_hit(make_client: MakeClient, server: FakeOpenAI) -> None:
    client = make_client()

    async def go() -> None:
        first = await client.chat("What is 2+2?", namespace="t")
        second = await client.chat("What is 2+2?", namespace="t")
        assert (first.text, first.cached) == ("What is 2+2?", False)
        assert (second.text, second.cached) == ("What is 2+2?", True)
        assert second.prompt_tokens == first.prompt_tokens > 0

    run(closing(client, go()))
    assert server.stats()["answered"] == 1
    assert (client.stats.requests, client.stats.cache_hits, client.stats.cache_misses) == (1, 1, 1)


def test_cache_persists_across_clients(make_client: MakeClient, server: FakeOpenAI) -> None:
    first = make_client()
    run(closing(first, first.chat("persist me", namespace="t")))
    first.close()
    second = make_client()
    response = run(closing(second, second.chat("persist me", namespace="t")))
    assert response.cached and response.text == "persist me"
    assert server.stats()["answered"] == 1


def test_namespace_is_a_directory(make_client: MakeClient, cache_dir: Path) -> None:
    client = make_client()
    run(closing(client, client.chat("hello", namespace="halueval")))
    assert (cache_dir / "halueval").is_dir()
    assert not (cache_dir / "default").exists()


def test_refresh_asks_again_and_overwrites(make_client: MakeClient, server: FakeOpenAI) -> None:
    client = make_client()
    run(closing(client, client.chat("Q", namespace="t")))
    server.configure(script=[{"pattern": "Q", "reply": "new answer"}])
    refreshing = make_client(refresh=True)

    async def go() -> None:
        fresh = await refreshing.chat("Q", namespace="t")
        again = await refreshing.chat("Q", namespace="t")  # written by this run: reused
        assert (fresh.text, fresh.cached) == ("new answer", False)
        assert (again.text, again.cached) == ("new answer", True)

    run(closing(refreshing, go()))
    later = make_client()
    assert run(closing(later, later.chat("Q", namespace="t"))).text == "new answer"
    assert server.stats()["answered"] == 2


def test_failed_refresh_keeps_the_old_answer(make_client: MakeClient, server: FakeOpenAI) -> None:
    client = make_client()
    run(closing(client, client.chat("keep me", namespace="t")))
    server.configure(rate_500=1.0)
    refreshing = make_client(refresh=True, max_retries=0)
    with pytest.raises(LLMError):
        run(closing(refreshing, refreshing.chat("keep me", namespace="t")))
    later = make_client()
    reply = run(closing(later, later.chat("keep me", namespace="t")))
    assert (reply.text, reply.cached) == ("keep me", True)


def test_no_cache_bypasses(make_client: MakeClient, server: FakeOpenAI, cache_dir: Path) -> None:
    client = make_client(cache=False)

    async def go() -> None:
        a = await client.chat("same", namespace="t")
        b = await client.chat("same", namespace="t")
        assert not a.cached and not b.cached

    run(closing(client, go()))
    assert server.stats()["answered"] == 2
    assert not cache_dir.exists()


def test_key_covers_model(make_client: MakeClient, server: FakeOpenAI) -> None:
    server.configure(responder="model-echo")
    client = make_client()

    async def go() -> None:
        a = await client.chat("judge this", model="model-a", namespace="t")
        b = await client.chat("judge this", model="model-b", namespace="t")
        assert a.text == "[model-a] judge this"
        assert b.text == "[model-b] judge this" and not b.cached

    run(closing(client, go()))
    assert server.stats()["answered"] == 2


def test_key_covers_base_url(make_client: MakeClient, cache_dir: Path) -> None:
    """Two endpoints serving the same model name never share answers."""
    with (
        FakeOpenAI(responder=lambda req: "from-A") as a,
        FakeOpenAI(responder=lambda req: "from-B") as b,
    ):
        client_a = make_client(configured_base_url=a.base_url)
        client_b = make_client(configured_base_url=b.base_url)
        assert run(closing(client_a, client_a.chat("who are you?", namespace="t"))).text == "from-A"
        reply = run(closing(client_b, client_b.chat("who are you?", namespace="t")))
        assert (reply.text, reply.cached) == ("from-B", False)


@pytest.mark.parametrize(
    ("change", "value"),
    [
        ("temperature", 0.7),
        ("max_tokens", 17),
        ("seed", 3),
        ("response_format", {"type": "json_object"}),
        ("repeat", 1),
        ("top_p", 0.5),
    ],
)
def test_key_covers_sampling_parameters(
    make_client: MakeClient, server: FakeOpenAI, change: str, value: object
) -> None:
    client = make_client()

    async def go() -> None:
        await client.chat("param", namespace="t")
        other = await client.chat("param", namespace="t", **{change: value})  # type: ignore[arg-type]
        assert not other.cached

    run(closing(client, go()))
    assert server.stats()["answered"] == 2


def test_key_ignores_key_timeout_and_retries(make_client: MakeClient, server: FakeOpenAI) -> None:
    client = make_client()
    run(closing(client, client.chat("stable", namespace="t")))
    other = make_client(api_key=Secret("sk-another-key"), timeout=1.5, max_retries=0, concurrency=3)
    assert run(closing(other, other.chat("stable", namespace="t"))).cached
    assert server.stats()["answered"] == 1


def test_errors_are_not_cached(make_client: MakeClient, server: FakeOpenAI) -> None:
    server.configure(rate_500=1.0)
    client = make_client(max_retries=1)
    with pytest.raises(LLMError, match="HTTP 500"):
        run(closing(client, client.chat("flaky", namespace="t")))
    server.configure(rate_500=0.0)
    retry = make_client()
    response = run(closing(retry, retry.chat("flaky", namespace="t")))
    assert (response.text, response.cached) == ("flaky", False)


def test_read_error_is_a_miss(
    make_client: MakeClient, server: FakeOpenAI, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(llm_cache, "_PROBLEMS", [])
    client = make_client()
    response = run(closing(client, client.chat("corrupt me", namespace="t")))
    client.close()
    cache = ResponseCache(cache_dir, run_id="x")
    ns = cache.namespace("t")
    assert ns is not None
    ns.set(response.key, b"\x00 not a cached answer")
    cache.close()
    again = make_client()
    reply = run(closing(again, again.chat("corrupt me", namespace="t")))
    assert (reply.text, reply.cached) == ("corrupt me", False)
    assert server.stats()["answered"] == 2
    [note] = llm_cache.problems()  # and said so, once
    assert "treated as misses" in note


def test_stale_claim_of_dead_process_is_taken_over(
    make_client: MakeClient, server: FakeOpenAI, cache_dir: Path
) -> None:
    """A claim left by a killed process (dead pid) does not block the request."""
    client = make_client()
    body = client.build_request("orphan")
    key = client.key_for(body)
    cache = ResponseCache(cache_dir, run_id="x")
    ns = cache.namespace("t")
    assert ns is not None
    dead = Claim(
        pid=2**22 + 12345, host=__import__("socket").gethostname(), token="old", expires=9e12
    )
    ns.set(key, claim_record(dead))
    cache.close()
    reply = run(closing(client, asyncio.wait_for(client.chat("orphan", namespace="t"), 10)))
    assert reply.text == "orphan"
    assert server.stats()["answered"] == 1


def test_a_lone_surrogate_in_a_prompt_has_a_key_of_its_own(make_client: MakeClient, server: FakeOpenAI) -> None:
    from pytest_evals.llm.cache import cache_key

    # Text decoded with surrogateescape (or a JSON "\ud800") has no UTF-8 form: the key
    # raised UnicodeEncodeError. Now it has one, distinct from every valid text's.
    assert cache_key({"p": "a\ud800"}) != cache_key({"p": "a\ud801"}) != cache_key({"p": "a"})
    # Keys of valid text are what they always were (existing caches keep their hits).
    assert cache_key({"p": "é"}) == hashlib.sha256('{"p":"é"}'.encode()).hexdigest()
    client = make_client()

    async def go() -> None:
        first = await client.chat("fine \ud800 text", namespace="t")
        second = await client.chat("fine \ud800 text", namespace="t")
        assert (first.cached, second.cached) == (False, True)

    run(closing(client, go()))
    assert server.stats()["answered"] == 1
