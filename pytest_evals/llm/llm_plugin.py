"""The LLM layer's pytest wiring: options, the ``llm``/``judge`` fixtures, usage totals.

Registered by the main plugin (``CORE_PLUGINS``). Usage is counted per process; under
xdist each worker sends its totals through ``config.workeroutput`` and the controller
adds them up in ``pytest_testnodedown`` before the run summary is built. A worker stopped
by Ctrl-C or SIGTERM still sets its workeroutput, but the controller, interrupted too,
no longer reads xdist's events: its totals are taken from the node itself at the end.

Before the first case, each process that runs cases (and the xdist controller, for the
labels) asks a local endpoint about itself (endpoint_probe.py): its model name when none
was given, its slots and context. Nothing there is a chat completion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.llm import (
    get_client,
    get_settings,
    is_offline,
    model_source,
    peek_client,
    use_endpoint,
)
from pytest_evals.llm.call_stats import LLMStats
from pytest_evals.llm.llm_options import add_options

if TYPE_CHECKING:
    # The client (aiohttp, openai) and the judge (pydantic) load when a test or a
    # suite uses them, not on every pytest run.
    from pytest_evals.llm.client import LLMClient
    from pytest_evals.llm.endpoint_probe import EndpointInfo
    from pytest_evals.llm.judge import Judge

WORKEROUTPUT_KEY = "pytest_evals_llm"
_worker_totals_key = pytest.StashKey[LLMStats]()
#: xdist nodes seen (by gateway id) and those whose totals were added.
_nodes_key = pytest.StashKey[dict[str, Any]]()
_counted_key = pytest.StashKey[set[str]]()
_endpoint_key = pytest.StashKey["EndpointInfo"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    try:
        get_settings(config)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_worker_totals_key] = LLMStats()
    config.stash[_nodes_key] = {}
    config.stash[_counted_key] = set()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """``--evals-batch`` against a server without a Batch API stops here, in one line,
    before any worker starts or anything is collected, recorded or sent."""
    config = session.config
    if getattr(config, "workerinput", None) is not None or config.option.collectonly:
        return
    from pytest_evals.llm.batch.batch_options import batch_settings

    settings = get_settings(config)
    if not batch_settings(config).enabled or settings.offline or settings.dry_run:
        return
    from pytest_evals.llm.batch.service import BatchService, NoBatchAPI

    service = BatchService(settings)
    try:
        service.check_available()
    except NoBatchAPI as exc:
        pytest.exit(f"evals batch: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    finally:
        service.close()


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Before the first case, outside every case's deadline: ask a local endpoint about
    itself (reachable? its model, slots, context). The xdist controller asks too: the
    run's labels are written there."""
    config = session.config
    settings = get_settings(config)
    if settings.offline or not settings.local or config.option.collectonly:
        return
    controller = config.pluginmanager.hasplugin("dsession")
    if not session.items and not controller:
        return
    from pytest_evals.llm.endpoint_probe import probe_endpoint_sync

    info = probe_endpoint_sync(settings.base_url, settings.authorization)
    config.stash[_endpoint_key] = info
    use_endpoint(config, info)
    if getattr(config, "workerinput", None) is None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            for line in endpoint_line(config, info).splitlines():
                reporter.write_line(line)


def endpoint_line(config: pytest.Config, info: EndpointInfo) -> str:
    """One line about the endpoint before the first case (or why it is not there)."""
    from pytest_evals.llm.client import display_url

    settings = get_settings(config)
    where = display_url(settings.base_url)
    if not info.reachable:
        line = (
            f"evals llm: {where} not reachable before the first case ({info.error}); "
            f"a request that needs it waits up to {min(10.0, settings.outage_wait):g}s, "
            "then every one fails with this reason"
        )
        if model_source(config) == "remembered":
            line += (
                f"\nevals llm: model {settings.model}, the name this server gave in an "
                "earlier run (kept beside the cache): cached answers for it are used"
            )
        return line
    parts = [f"model {settings.model}" + ("" if settings.model_explicit else " (the server's own)")]
    limits = info.limits_text()
    if limits:
        parts.append(limits)
    if info.slots:
        parts.append(f"at most {min(settings.concurrency, info.slots)} requests in flight")
    return f"evals llm: {where}: " + "; ".join(parts)


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
    if _nodes_key in config.stash:
        _count_unread_nodes(config)
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
def pytest_testnodeready(node: Any) -> None:
    node.config.stash[_nodes_key][_node_id(node)] = node


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    _count_node(node.config, node)
    # Down is final: it finished (its totals, if any, were just counted) or crashed (it
    # sends nothing more). Left in the list, a crashed worker whose channel never reads
    # as closed made every later look at the totals wait WORKER_TOTALS_WAIT for it (a run
    # with a killed worker ended ~20 s late).
    node.config.stash[_nodes_key].pop(_node_id(node), None)


def _node_id(node: Any) -> str:
    return str(getattr(getattr(node, "gateway", None), "id", id(node)))


def _count_node(config: pytest.Config, node: Any) -> None:
    ident = _node_id(node)
    counted = config.stash[_counted_key]
    if ident in counted:
        return
    data = (getattr(node, "workeroutput", None) or {}).get(WORKEROUTPUT_KEY)
    if data:
        counted.add(ident)
        config.stash[_worker_totals_key].add(LLMStats.from_json(data))


#: Seconds an interrupted controller waits for its workers' last totals (they stop on
#: the same Ctrl-C or SIGTERM and send them as their sessions finish).
WORKER_TOTALS_WAIT = 10.0


def _count_unread_nodes(config: pytest.Config) -> None:
    """Workers whose totals arrived after the controller stopped reading xdist's events
    (an interrupted run): xdist stores each worker's output on its node as it comes, on
    its own thread, so they are waited for here (within a bound, and not for a worker
    whose channel is already closed: it crashed and sends nothing)."""
    import time

    nodes = list(config.stash.get(_nodes_key, {}).values())
    counted = config.stash[_counted_key]
    deadline = time.monotonic() + WORKER_TOTALS_WAIT
    while True:
        waiting = False
        for node in nodes:
            _count_node(config, node)
            if _node_id(node) in counted or getattr(node, "workeroutput", None):
                continue
            channel = getattr(node, "channel", None)
            closed = channel is None or bool(getattr(channel, "isclosed", lambda: True)())
            waiting = waiting or not closed
        if not waiting or time.monotonic() > deadline:
            return
        time.sleep(0.05)


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
    info = config.stash.get(_endpoint_key, None)
    return {
        "judge": judge_name(config),
        "judge_line": judge_line(config),
        "offline": settings.offline,
        **{k: v for k, v in settings.public().items()},
        "model_source": "option" if settings.model_explicit else (
            model_source(config)
            or ("server" if settings.serves_own_model and info is not None and info.models else "default")
        ),
        "price_note": price_note(config),
        "endpoint": None if info is None else info.to_json(),
        **process_totals(config).to_json(),
    }


def price_note(config: pytest.Config) -> str | None:
    """Why the run's cost may be unknown (None: the built-in prices apply)."""
    settings = get_settings(config)
    if not settings.serves_own_model:
        return None
    info = config.stash.get(_endpoint_key, None)
    # The model is named only when the server named it: the requests (suites, variants)
    # may have asked for others, and the session default was asked for by nobody.
    served = f"{settings.model} is" if info is not None and info.models else "the models are"
    return (
        f"{served} served by a local endpoint: no built-in price applies "
        "(--evals-price MODEL=IN,OUT sets one)"
    )


@pytest.hookimpl(optionalhook=True)
def pytest_evals_summary(config: pytest.Config, summary: dict[str, Any]) -> None:
    summary["llm"] = llm_summary(config)


def usage_line(stats: LLMStats, note: str | None = None) -> str:
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
        cost += f" (+{stats.unpriced_requests} requests of unknown price"
        cost += f": {note})" if note else ")"
    parts.append(cost)
    parts.append(f"{stats.errors} errors")
    line = "evals llm: " + ", ".join(parts)
    if stats.outage_resends:
        line += f"\nevals llm: {stats.outage_resends} requests sent again after the endpoint came back"
    if stats.unreachable:
        line += (
            f"\nevals llm: {stats.unreachable} requests not sent, the endpoint was "
            f"unreachable: {stats.unreachable_reason}"
        )
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
        for line in usage_line(totals, price_note(config)).splitlines():
            terminalreporter.write_line(line)


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # Before the session's engine loop stops: HTTP pools must close on their own loop.
    client = peek_client(config)
    if client is not None:
        client.close()


__all__ = ["judge", "llm"]
