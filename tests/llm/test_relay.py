"""The process transport: aiohttp in a helper process (pytest_evals/llm/transport/process_transport.py).

The behaviour shared with the other transports (faults, Retry-After, body cap, secrets
in written files, concurrency) is checked by the tests parametrized over transports;
these check what only a helper process can get wrong: its life, its death, and what
the operating system can see of it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.llm import LLMClient
from pytest_evals.llm.retry import AttemptError
from pytest_evals.llm.transport.pipe_frames import Frames, frame
from pytest_evals.llm.transport.process_transport import ProcessTransport
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import TEST_KEY, closing, run
from .helpers import endpoint_args, probe_suite

MakeClient = Callable[..., LLMClient]
BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


def _transport(client: LLMClient) -> ProcessTransport:
    state = client._state()
    transport = client._transport(state)
    assert isinstance(transport, ProcessTransport)
    return transport


def test_frames_split_anywhere() -> None:
    data = frame(4, 7, ["a", 1]) + frame(5, 8, {"x": "é" * 3000}) + frame(3, 9, None)
    for cut in (1, 5, 9, 10, len(data) - 1):
        frames = Frames()
        got = frames.feed(data[:cut]) + frames.feed(data[cut:])
        assert [(k, i) for k, i, _ in got] == [(4, 7), (5, 8), (3, 9)]
        assert got[1][2].decode().count("é") == 3000


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_key_not_visible_to_the_os(make_client: MakeClient, server: FakeOpenAI) -> None:
    """The key reaches the helper only through its stdin pipe: not in its command line
    or environment (this test's environment holds no key: see conftest)."""
    server.configure(require_key=TEST_KEY)
    client = make_client(transport="process")

    async def go() -> tuple[str, bytes, bytes]:
        reply = await client.chat("hello", namespace="t")
        transport = _transport(client)
        assert transport._child is not None
        pid = transport._child.get_pid()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        return reply.text, cmdline, environ

    text, cmdline, environ = run(closing(client, go()))
    assert text  # the request was authorised: the key did reach the server
    assert TEST_KEY.encode() not in cmdline and TEST_KEY.encode() not in environ
    assert b"Bearer" not in environ


def test_killed_helper_costs_a_retry_not_an_answer(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    server.configure(latency=0.3)
    client = make_client(transport="process", max_retries=2, concurrency=8)

    async def go() -> tuple[list[str], int, int]:
        await client.chat("warm", namespace="t")
        transport = _transport(client)
        first = transport._child
        assert first is not None
        pending = [asyncio.ensure_future(client.chat(f"q{i}", namespace="t")) for i in range(6)]
        await asyncio.sleep(0.1)  # all six are waiting on the server
        os.kill(first.get_pid(), signal.SIGKILL)
        replies = await asyncio.gather(*pending)
        return [r.text for r in replies], transport.starts, client.stats.attempts

    texts, starts, attempts = run(closing(client, go()))
    assert all(texts) and len(texts) == 6
    assert starts == 2  # the dead helper was replaced
    assert attempts >= 1 + 6 + 6  # the warm-up, the six lost attempts, the six retries
    # The dead helper's claims were taken over and every answer was stored once.
    again = make_client(transport="aiohttp")

    async def rerun() -> list[bool]:
        replies = [await again.chat(f"q{i}", namespace="t") for i in range(6)]
        return [r.cached for r in replies]

    assert run(closing(again, rerun())) == [True] * 6
    assert again.stats.requests == 0


def test_the_helper_claims_and_stores(make_client: MakeClient, server: FakeOpenAI) -> None:
    """With the process transport the cache's SQLite writes (claims, answers) happen in
    the helper, off this process: the claim on a request in flight is the helper's, this
    process writes nothing, and the answer is there for a client of another transport."""
    server.configure(latency=0.5)
    client = make_client(transport="process")

    async def go() -> tuple[int, int | None, int]:
        await client.chat("warm", namespace="t")
        transport = _transport(client)
        assert transport._child is not None
        helper = transport._child.get_pid()
        key = client.key_for(client.build_request("hello"))
        asking = asyncio.ensure_future(client.chat("hello", namespace="t"))
        await asyncio.sleep(0.25)  # claimed, waiting on the server
        assert client.cache is not None
        claim = client.cache.peek_claim("t", key)
        await asking
        return helper, claim.pid if claim else None, sum(b.commits for b in client.cache._batchers.values())

    helper, claimant, commits = run(closing(client, go()))
    assert claimant == helper != os.getpid()
    assert commits == 0
    other = make_client(transport="aiohttp")
    reply = run(closing(other, other.chat("hello", namespace="t")))
    assert reply.cached and other.stats.requests == 0


def test_a_cancelled_request_leaves_no_claim(make_client: MakeClient, server: FakeOpenAI) -> None:
    """A request given up (its deadline) drops its claim in the helper: another process
    asking next does not wait for an answer that is not coming."""
    client = make_client(transport="process", timeout=0.3, max_retries=0)

    async def go() -> bool:
        server.configure(latency=2.0)
        with pytest.raises(Exception, match=r"no complete reply within 0\.3s"):
            await client.chat("slow", namespace="t")
        assert client.cache is not None
        key = client.key_for(client.build_request("slow"))
        for _ in range(100):  # the release is not waited for: poll the file
            if client.cache.peek_claim("t", key) is None:
                return True
            await asyncio.sleep(0.02)
        return False

    assert run(closing(client, go()))


def test_helper_that_cannot_start_says_why(
    make_client: MakeClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'helper: no module named aiohttp (simulated)' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    client = make_client(transport="process", max_retries=3)

    async def go() -> None:
        await client.chat("hello", namespace="t")

    with pytest.raises(Exception) as info:
        run(closing(client, go()))
    message = str(info.value)
    assert "HTTP helper process exited (code 3)" in message
    assert "no module named aiohttp (simulated)" in message
    assert client.stats.attempts == 1  # not retried: another start would fail the same way
    # Without a helper, this process claimed the request itself, and dropped the claim.
    assert client.cache is not None
    key = client.key_for(client.build_request("hello"))
    assert client.cache.peek_claim("t", key) is None
    assert sum(b.commits for b in client.cache._batchers.values()) >= 1


def test_deadline_cancels_in_the_helper_and_it_keeps_serving(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    client = make_client(transport="process", timeout=0.3, max_retries=0)

    async def go() -> str:
        server.configure(latency=2.0)
        with pytest.raises(Exception, match=r"no complete reply within 0\.3s"):
            await client.chat("slow", namespace="t")
        server.configure(latency=0.0)
        transport = _transport(client)
        assert transport._pending == {}  # nothing left waiting for the cancelled reply
        return (await client.chat("fast", namespace="t")).text

    assert run(closing(client, go()))
    assert client.stats.attempts == 2


def test_helper_exits_with_the_client(make_client: MakeClient, server: FakeOpenAI) -> None:
    client = make_client(transport="process")
    children: list[Any] = []

    async def go() -> None:
        await client.chat("hello", namespace="t")
        children.append(_transport(client)._child)

    run(closing(client, go()))
    assert children[0].get_returncode() is not None


def test_helper_exits_when_the_parent_is_killed(server: FakeOpenAI, tmp_path: Path) -> None:
    """A parent killed with SIGKILL runs no cleanup: the helper sees end-of-file on its
    stdin and exits by itself."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import asyncio, sys, time\n"
        "from pytest_evals.llm import LLMClient, LLMSettings\n"
        f"c = LLMClient(LLMSettings(configured_base_url={server.base_url!r}, cache=False, transport='process'))\n"
        "async def go():\n"
        "    await c.chat('hello', namespace='t')\n"
        "    print(c._states[asyncio.get_running_loop()].transport._child.get_pid(), flush=True)\n"
        "    time.sleep(60)\n"
        "asyncio.run(go())\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child_pid = int(parent.stdout.readline())
        parent.kill()
        parent.wait(10)
        for _ in range(200):
            try:
                os.kill(child_pid, 0)
            except ProcessLookupError:
                break
            if (
                Path(f"/proc/{child_pid}/stat").exists()
                and " Z " in Path(f"/proc/{child_pid}/stat").read_text()
            ):
                break  # exited; only waiting to be reaped by init
            asyncio.run(asyncio.sleep(0.05))
        else:
            pytest.fail(f"helper {child_pid} still running after its parent was killed")
    finally:
        if parent.poll() is None:
            parent.kill()


def test_parent_imports_no_http_stack(server: FakeOpenAI, tmp_path: Path) -> None:
    """The point of the transport: aiohttp (and its per-request work) lives in the helper."""
    code = (
        "import asyncio, sys\n"
        "from pytest_evals.llm import LLMClient, LLMSettings\n"
        f"c = LLMClient(LLMSettings(configured_base_url={server.base_url!r}, cache=False, transport='process'))\n"
        "async def go():\n"
        "    r = await c.chat('hello', namespace='t')\n"
        "    await c.aclose()\n"
        "    return r.text\n"
        "assert asyncio.run(go())\n"
        "print(sorted(m for m in ('aiohttp', 'openai', 'httpx') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_attempt_errors_cross_the_pipe_intact(make_client: MakeClient, server: FakeOpenAI) -> None:
    """Status, retryability and Retry-After come back as the aiohttp transport made them."""
    server.configure(rate_429=1.0, retry_after=7)
    client = make_client(transport="process", max_retries=0)

    async def go() -> AttemptError:
        transport = _transport(client)
        with pytest.raises(AttemptError) as info:
            await transport.send(dict(BODY))
        return info.value

    error = run(closing(client, go()))
    assert error.status == 429 and error.retryable and error.retry_after == 7


@pytest.mark.parametrize(("extra", "helpers"), [([], 0), (["--evals-transport", "process"], 1)])
@pytest.mark.parametrize("xdist", [False, True])
def test_the_helper_process_is_opt_in(
    pytester: pytest.Pytester,
    server: FakeOpenAI,
    tmp_path: Path,
    extra: list[str],
    helpers: int,
    xdist: bool,
) -> None:
    """``auto`` (the default) sends suites' requests from this process (aiohttp);
    ``--evals-transport process`` through a helper process, one per xdist worker; the
    same answers either way."""
    probe_suite(pytester, [f"question {i}" for i in range(6)])
    summary = tmp_path / "summary.json"
    args = [*endpoint_args(server, tmp_path / "cache"), *extra, f"--evals-json={summary}"]
    result = pytester.runpytest_subprocess(*args, *(["-n", "2"] if xdist else []))
    result.assert_outcomes(passed=6)
    llm = json.loads(summary.read_text())["llm"]
    assert llm["requests"] == 6
    assert llm["helper_processes"] == helpers * (2 if xdist else 1)


def test_auto_transport_resolution() -> None:
    from pytest_evals.llm import LLMSettings
    from pytest_evals.llm.client import resolve_transport

    auto = LLMSettings(configured_base_url="http://127.0.0.1:9/v1")
    assert auto.transport == "auto"
    assert resolve_transport(auto) == "lean"  # suites, a script, the llm fixture alike
    # TLS and anything not plain http:// go through aiohttp.
    for url in ("https://api.example.com/v1", "HTTPS://gw.internal/v1"):
        assert resolve_transport(LLMSettings(configured_base_url=url)) == "aiohttp"
    assert resolve_transport(LLMSettings(configured_base_url="HTTP://127.0.0.1:9/v1")) == "lean"
    for chosen in ("process", "aiohttp", "lean", "openai"):
        settings = LLMSettings(configured_base_url="http://127.0.0.1:9/v1", transport=chosen)  # type: ignore[arg-type]
        assert resolve_transport(settings) == chosen


@pytest.mark.parametrize("transport", ["process", "aiohttp", "lean"])
def test_a_reply_with_lone_surrogates_is_read(
    make_client: MakeClient, server: FakeOpenAI, transport: str
) -> None:
    """A server may send "\\ud800" in its JSON: Python's json reads it, orjson (the
    pipe's codec) does not. The reply arrives as the in-process transport reads it."""
    reply = "left \ud800 alone, and \udfff too"
    server.configure(responder=lambda request: reply)
    client = make_client(transport=transport, max_retries=0, timeout=5.0)

    async def go() -> str:
        return (await client.chat("say something odd", namespace="t")).text

    assert run(closing(client, go())) == reply
