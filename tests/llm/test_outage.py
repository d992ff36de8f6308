"""A server that goes away is waited for (within --evals-outage-wait), not failed on."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_evals.llm import LLMClient
from pytest_evals.llm.call_errors import EndpointUnreachable
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import closing, run
from .helpers import endpoint_args, probe_suite

MakeClient = Callable[..., LLMClient]


@pytest.mark.parametrize("transport", ["aiohttp", "lean", "openai", "process"])
def test_a_restart_mid_run_loses_no_request(
    make_client: MakeClient, server: FakeOpenAI, transport: str
) -> None:
    """The server stops (requests in flight are cut, new ones refused) and comes back
    on the same port 3 s later: every request is answered, none counted as failed, and
    the attempts lost to the outage are not retries (max_retries=1 would not cover them)."""
    server.configure(latency=0.05)
    client = make_client(concurrency=4, max_retries=1, outage_wait=30.0, transport=transport)
    answered = threading.Event()

    def restart() -> None:
        answered.wait(10)
        server.restart(3.0)

    async def go() -> list[str]:
        first = await client.chat("before", namespace="t")
        answered.set()
        rest = await asyncio.gather(*(client.chat(f"r{i}", namespace="t") for i in range(40)))
        return [first.text, *(r.text for r in rest)]

    thread = threading.Thread(target=restart)
    thread.start()
    try:
        texts = run(closing(client, go()))
    finally:
        thread.join(30)
    assert texts == ["before", *(f"r{i}" for i in range(40))]
    assert client.stats.errors == 0
    assert client.stats.outage_resends >= 1
    assert server.stats()["answered"] >= 1  # the restarted server answered the rest


def test_an_outage_past_the_bound_fails_every_request_with_one_reason(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    client = make_client(concurrency=4, outage_wait=1.0, max_retries=6)
    run(closing(client, client.chat("up", namespace="t")))  # it answered once
    server.stop()

    async def go() -> tuple[list[BaseException | object], float, float]:
        started = time.monotonic()
        results = await asyncio.gather(
            *(client.chat(f"d{i}", namespace="t") for i in range(6)), return_exceptions=True
        )
        first = time.monotonic() - started
        started = time.monotonic()
        with pytest.raises(EndpointUnreachable):
            await client.chat("later", namespace="t")
        return results, first, time.monotonic() - started

    results, first, later = run(closing(client, go()))
    assert all(isinstance(r, EndpointUnreachable) for r in results), results
    reasons = {r.cause for r in results if isinstance(r, EndpointUnreachable)}
    assert len(reasons) == 1, reasons  # one reason, the same for all
    (reason,) = reasons
    # Said in full by the first request to fail, referred to by the others.
    assert sorted(str(r) == reason for r in results) == [False] * 5 + [True]
    assert all("unreachable: not sent" in str(r) for r in results if str(r) != reason)
    assert client.stats.unreachable_reason == reason
    assert "unreachable for 1s" in reason and "connection error" in reason
    assert "--evals-outage-wait" in reason
    assert 0.9 < first < 6  # waited the bound, not the retries' backoff
    assert later < 0.5  # past the bound: at once
    assert client.stats.errors == 7


def test_an_endpoint_never_reached_fails_fast(make_client: MakeClient) -> None:
    """A wrong URL: the run does not wait the whole outage bound for a server that
    never answered (at most 10 s, here the smaller outage bound)."""
    client = make_client(configured_base_url="http://127.0.0.1:9/v1", outage_wait=0.5)

    async def go() -> float:
        started = time.monotonic()
        results = await asyncio.gather(
            *(client.chat(f"n{i}", namespace="t") for i in range(5)), return_exceptions=True
        )
        assert all(isinstance(r, EndpointUnreachable) for r in results), results
        assert "it never answered in this run" in str(results[0])
        return time.monotonic() - started

    assert run(closing(client, go())) < 3
    assert client.stats.attempts == 0  # checked first: no completion was ever sent


def test_a_40s_restart_mid_suite_loses_no_case(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path
) -> None:
    """A whole run: the server goes away for 40 s after a few cases were answered and
    comes back on the same port; every case passes, none is an ERROR, and the summary
    says how many attempts were sent again."""
    server.configure(latency=0.1)
    probe_suite(pytester, [f"case {i}" for i in range(30)])
    out = tmp_path / "s.json"

    def restart() -> None:
        deadline = time.monotonic() + 60
        while server.stats()["answered"] < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        server.restart(40.0)

    thread = threading.Thread(target=restart)
    thread.start()
    try:
        result = pytester.runpytest(
            *endpoint_args(server, tmp_path / "c", "--evals-json", str(out)),
            "--evals-concurrency", "4", "--evals-timeout", "5", "--evals-max-retries", "1",
        )
    finally:
        thread.join(90)
    result.assert_outcomes(passed=30)
    llm = json.loads(out.read_text())["llm"]
    assert llm["errors"] == 0 and llm["requests"] == 30
    assert llm["outage_resends"] >= 1
    result.stdout.fnmatch_lines(["evals llm: * requests sent again after the endpoint came back"])


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_a_server_not_running_is_one_error_said_once(
    pytester: pytest.Pytester, tmp_path: Path, workers: list[str]
) -> None:
    """Nothing listening: every case is an ERROR (no suite passes, exit 1), but the
    reason (URL and cause) is spelled out once per process, every other case carries a
    one-line reference, and the summary and the JSON say why."""
    probe_suite(pytester, [f"case {i}" for i in range(6)])
    probe_suite(pytester, [f"x {i}" for i in range(4)], name="second")
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    out = tmp_path / "s.json"
    result = pytester.runpytest(
        "--evals-base-url", url, "--evals-cache-dir", str(tmp_path / "c"),
        "--evals-json", str(out), "--evals-outage-wait", "1", *workers,
    )
    result.assert_outcomes(errors=10)
    assert result.ret == 1
    # pytest's short summary repeats each error's first line (in full under CI=true)
    text = result.stdout.str().split("short test summary info")[0]
    full = f"LLM endpoint {url} unreachable for 1s (it never answered in this run)"
    processes = 2 if workers else 1
    assert 1 <= text.count(full) <= processes + 1, text  # the cases, once per process; the summary
    assert text.count(f"LLM endpoint {url} unreachable: not sent") >= 10 - processes
    result.stdout.fnmatch_lines([f"evals llm: 10 requests not sent, the endpoint was unreachable: {full}*"])
    summary = json.loads(out.read_text())
    assert summary["passed"] is False
    assert summary["llm"]["unreachable"] == 10 and summary["llm"]["errors"] == 10
    assert summary["llm"]["unreachable_reason"].startswith(full)
    assert "Connection refused" in summary["llm"]["unreachable_reason"]
    assert summary["llm"]["requests"] == 0
