"""The LLM layer's pytest wiring: options, the ``llm``/``judge`` fixtures, usage totals.

Registered by the main plugin (``pytest_plugins``). Usage is counted per process; under
xdist each worker sends its totals through ``config.workeroutput`` and the controller
adds them up in ``pytest_testnodedown`` before the run summary is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.llm import get_client, get_settings, is_offline, peek_client
from pytest_evals.llm.call_stats import LLMStats
from pytest_evals.llm.llm_options import add_options

if TYPE_CHECKING:
    # The client (aiohttp, openai) and the judge (pydantic) load when a test or a
    # suite uses them, not on every pytest run.
    from pytest_evals.llm.client import LLMClient
    from pytest_evals.llm.judge import Judge

WORKEROUTPUT_KEY = "pytest_evals_llm"
_worker_totals_key = pytest.StashKey[LLMStats]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    try:
        get_settings(config)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_worker_totals_key] = LLMStats()


@pytest.fixture(scope="session")
def llm(pytestconfig: pytest.Config) -> LLMClient:
    """The session's LLM client: cached, retrying, concurrency-limited.

    Skips the test when no endpoint is configured (see ``--evals-base-url``)::

        def test_capital(llm):
            assert "Paris" in llm.complete("Capital of France? One word.")

        def test_reply(llm):
            reply = llm.chat_sync([{"role": "user", "content": "Say hi"}], temperature=0)
            assert reply.text and reply.prompt_tokens > 0

    ``await llm.chat(...)`` is the async form (``ctx.llm`` in tasks).
    """
    if is_offline(pytestconfig):
        pytest.skip(
            "no LLM endpoint configured (set --evals-base-url / OPENAI_BASE_URL or an API key)"
        )
    return get_client(pytestconfig)


@pytest.fixture(scope="session")
def judge(llm: LLMClient) -> Judge:
    """LLM-as-judge helpers over the ``llm`` client::

        def test_polite(judge):
            ok, _ = judge.verdict_sync("Is 'Thank you!' polite? Answer Yes or No.")
            assert ok is True

        def test_scored(judge):
            data, reply = judge.json_sync('Rate "hello" for politeness as {"score": 1-5}.')
            assert 1 <= data["score"] <= 5

    An unreadable reply is re-asked (bounded), then raises ``JudgeError`` with the raw
    reply. Async forms: ``await judge.json(...)``, ``judge.text``, ``judge.verdict``.
    """
    from pytest_evals.llm.judge import Judge

    return Judge(llm)


# -- totals ---------------------------------------------------------------------------------
def process_totals(config: pytest.Config) -> LLMStats:
    """This process's usage plus whatever xdist workers reported."""
    total = LLMStats()
    client = peek_client(config)
    if client is not None:
        total.add(client.stats)
    workers = config.stash.get(_worker_totals_key, None)
    if workers is not None:
        total.add(workers)
    return total


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    workeroutput = getattr(config, "workeroutput", None)
    client = peek_client(config)
    if workeroutput is not None and client is not None:
        workeroutput[WORKEROUTPUT_KEY] = client.stats.to_json()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    data = getattr(node, "workeroutput", {}).get(WORKEROUTPUT_KEY)
    if data:
        node.config.stash[_worker_totals_key].add(LLMStats.from_json(data))


def judge_name(config: pytest.Config) -> str:
    from pytest_evals.llm.settings import OFFLINE_DISPLAY_NAME as DISPLAY_NAME

    settings = get_settings(config)
    return DISPLAY_NAME if settings.offline else settings.model


def judge_line(config: pytest.Config) -> str:
    from pytest_evals.llm.client import display_url
    from pytest_evals.llm.settings import OFFLINE_DISPLAY_NAME as DISPLAY_NAME

    settings = get_settings(config)
    if settings.offline:
        reason = "--evals-offline" if settings.force_offline else "no model endpoint configured"
        # Not every task judges offline with the embedding model (HaluEval's default
        # offline judge is a lexical rule); each case's details name the judge used.
        return f"judge: {DISPLAY_NAME} ({reason}), or a task's own offline rule (see each case's judge)"
    cache = f"cache {settings.cache_dir}" if settings.cache else "cache off"
    if settings.refresh:
        cache += ", refreshing"
    mode = ", DRY RUN" if settings.dry_run else ""
    return f"judge: {settings.model} @ {display_url(settings.base_url)} ({cache}{mode})"


def llm_summary(config: pytest.Config) -> dict[str, Any]:
    settings = get_settings(config)
    return {
        "judge": judge_name(config),
        "judge_line": judge_line(config),
        "offline": settings.offline,
        **{k: v for k, v in settings.public().items()},
        **process_totals(config).to_json(),
    }


@pytest.hookimpl(optionalhook=True)
def pytest_evals_summary(config: pytest.Config, summary: dict[str, Any]) -> None:
    summary["llm"] = llm_summary(config)


def usage_line(stats: LLMStats) -> str:
    parts = [f"{stats.requests} requests"]
    extras = [
        f"{n} {what}"
        for n, what in ((stats.retries, "retries"), (stats.throttled, "throttled"))
        if n
    ]
    if extras:
        parts[0] += f" ({', '.join(extras)})"
    parts.append(f"{stats.cache_hits} cache hits, {stats.cache_misses} misses")
    parts.append(f"{stats.prompt_tokens:,} prompt + {stats.completion_tokens:,} completion tokens")
    cost = f"${stats.cost_usd:.4f}"
    if stats.unpriced_requests:
        cost += f" (+{stats.unpriced_requests} requests of unknown price)"
    parts.append(cost)
    parts.append(f"{stats.errors} errors")
    line = "evals llm: " + ", ".join(parts)
    if stats.dry_run_requests:
        line += (
            f"\nevals llm dry run: {stats.dry_run_requests} uncached requests not sent, "
            f"~{stats.dry_run_prompt_tokens:,} prompt + ~{stats.dry_run_completion_tokens:,} completion tokens, "
            f"~${stats.dry_run_cost_usd:.4f}"
        )
    return line


@pytest.hookimpl(optionalhook=True)
def pytest_evals_terminal_summary(config: pytest.Config, terminalreporter: Any) -> None:
    totals = process_totals(config)
    if totals.active:
        for line in usage_line(totals).splitlines():
            terminalreporter.write_line(line)


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # Before the session's engine loop stops: HTTP pools must close on their own loop.
    client = peek_client(config)
    if client is not None:
        client.close()


__all__ = ["judge", "llm"]
