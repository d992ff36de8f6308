"""Batch mode's pytest wiring: options, the phase before the item loop, totals, summary.

The phase runs in ``pytest_runtestloop`` before items do, in every process that runs
items (a plain run, or each xdist worker: see batch_phase.py for how workers share it).
It installs the batch gate in the LLM layer's I/O hook slot (llm/io_hooks.py) for the
rest of the run: the gather rounds record requests through it, and the scoring pass
turns the requests whose batch lines failed for good into errors.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

import pytest

from pytest_evals.llm import io_hooks
from pytest_evals.llm.batch import batch_gate as gate
from pytest_evals.llm.batch.batch_options import BatchSettings, add_options, batch_settings
from pytest_evals.llm.batch.batch_stats import BatchStats
from pytest_evals.llm.batch.service import NoBatchAPI
from pytest_evals.llm.call_errors import LLMError

log = logging.getLogger("pytest_evals.llm")

WORKEROUTPUT_KEY = "pytest_evals_batch"
#: A worker's "no Batch API" line, for the controller to exit with.
REFUSED_KEY = "pytest_evals_batch_refused"
_refused_key = pytest.StashKey[str]()
_settings_key = pytest.StashKey[BatchSettings]()
_stats_key = pytest.StashKey[BatchStats]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    settings = batch_settings(config)
    config.stash[_settings_key] = settings
    config.stash[_stats_key] = BatchStats()
    if settings.enabled:
        from pytest_evals.llm import get_settings

        try:
            cache = get_settings(config).cache
        except ValueError as exc:  # a bad LLM option (the LLM plugin's configure may come later)
            raise pytest.UsageError(str(exc)) from None
        if not cache:
            raise pytest.UsageError("--evals-batch needs the response cache (it fills it): drop --no-evals-cache")


def _reporter(config: pytest.Config) -> Any:
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is None or hasattr(config, "workerinput"):
        return lambda line: log.warning("%s", line)
    return lambda line: tr.write_line(line)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    config = session.config
    settings = config.stash[_settings_key]
    # Only --evals-batch or a suite with ``batch: true`` has a batch phase; the phase
    # (the LLM client) is not imported for the other runs.
    if session.items and not config.option.collectonly and (settings.enabled or _batch_suites(session.items)):
        from pytest_evals.worker.batch_phase import cases_of

        cases = cases_of(session.items, settings.enabled)
        if cases:
            _run_phase(config, settings, cases)
    return (yield)


def _batch_suites(items: list[pytest.Item]) -> bool:
    # Case items carry their task (collection/suite_items.py); others have none.
    return any(getattr(getattr(getattr(it, "task", None), "config", None), "batch", False) for it in items)


def _run_phase(config: pytest.Config, settings: BatchSettings, cases: list[Any]) -> None:
    from pytest_evals.llm import get_client
    from pytest_evals.worker.batch_phase import BatchPhase

    client = get_client(config)
    if client.offline or client.cache is None:
        return  # offline judges ask nothing; configure() refused --no-evals-cache
    if client.settings.provider != "openai":
        # configure() refused --evals-batch with this provider; a suite's ``batch: true``
        # cannot be refused there, and OpenAI's Batch API must not be driven at AWS.
        _reporter(config)(
            f"evals batch: suites' 'batch: true' ignored: --evals-provider {client.settings.provider} "
            "has no Batch API here; their requests are sent interactively"
        )
        return
    phase = BatchPhase(client, _context(config), settings, cases, report=_reporter(config))
    io_hooks.install(gate.GATE)  # until pytest_unconfigure
    try:
        stats = phase.run()
    except NoBatchAPI as exc:
        _refuse(config, f"evals batch: {exc}")
        return
    except LLMError as exc:
        # Scoring now would ask interactively what a recorded batch may still answer:
        # stop, and let the next --evals-batch run re-attach.
        pytest.exit(
            f"evals batch: {exc}\nstopped before scoring so that no request is paid twice; "
            "the next --evals-batch run re-attaches to the recorded batches "
            "(pytest-evals batch status lists them)",
            returncode=pytest.ExitCode.INTERNAL_ERROR,
        )
    config.stash[_stats_key].add(stats)


def _refuse(config: pytest.Config, reason: str) -> None:
    """No Batch API: the run stops in one line, as ``--evals-batch`` does before any
    worker starts. A suite's own ``batch: true`` is only seen once cases are collected,
    which under xdist is in the workers: a worker that exits with cases assigned to it
    is a crash to xdist (an INTERNALERROR). So a worker runs no case, stops, and hands
    the reason to the controller, which exits with it (pytest_testnodedown below)."""
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is None:
        pytest.exit(reason, returncode=pytest.ExitCode.USAGE_ERROR)
    workeroutput[REFUSED_KEY] = reason
    config.stash[_refused_key] = reason


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> bool | None:
    # A refusing worker runs none of the cases xdist still hands it (nothing is asked).
    if item.config.stash.get(_refused_key, None) is not None:
        item.session.shouldstop = item.config.stash[_refused_key]
        return True
    return None


def _context(config: pytest.Config) -> Any:
    from pytest_evals.worker.case_runner import get_runner

    # The runner's context: its LLM client, cache and engine are the ones items use.
    return get_runner(config).ctx


def batch_totals(config: pytest.Config) -> BatchStats:
    return config.stash.get(_stats_key, BatchStats())


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[WORKEROUTPUT_KEY] = batch_totals(session.config).to_json()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    output = getattr(node, "workeroutput", None) or {}
    data = output.get(WORKEROUTPUT_KEY)
    if data:
        node.config.stash[_stats_key].add(BatchStats.from_json(data))
    refused = output.get(REFUSED_KEY)
    if refused:
        # The worker's one-line refusal becomes the run's (_refuse above).
        pytest.exit(str(refused), returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.hookimpl(optionalhook=True)
def pytest_evals_summary(config: pytest.Config, summary: dict[str, Any]) -> None:
    stats = batch_totals(config)
    if stats.active or config.stash[_settings_key].enabled:
        summary["batch"] = {"retry": config.stash[_settings_key].retry, **stats.to_json()}


def summary_lines(stats: BatchStats) -> list[str]:
    lines = []
    if stats.rounds or stats.batches:
        line = (
            f"evals batch: {stats.rounds} round{'s' if stats.rounds != 1 else ''}, {stats.batches} batch(es)"
            f"{f' ({stats.reattached} re-attached)' if stats.reattached else ''}, "
            f"{stats.completed}/{stats.lines} lines completed, {stats.failed_lines} failed lines"
        )
        if stats.retried_live:
            line += f" ({stats.retried_live} retried live)"
        if stats.given_up:
            line += f", {stats.given_up} given up (their cases are ERRORs)"
        lines.append(line)
        cost = f"${stats.cost_usd:.4f} at batch prices (${stats.interactive_cost_usd:.4f} interactive)"
        if stats.unpriced:
            cost += f" (+{stats.unpriced} of unknown price)"
        lines.append(
            f"evals batch: {stats.prompt_tokens:,} prompt + {stats.completion_tokens:,} completion tokens, "
            f"{cost}, {stats.wait_seconds:.1f}s waiting"
        )
        lines.extend(f"evals batch: {incident}" for incident in stats.incidents)
    if stats.dry_run_requests:
        lines.append(
            f"evals batch dry run: {stats.dry_run_requests} uncached requests would go in {stats.dry_run_batches} batch(es) "
            f"(first round), ~{stats.dry_run_prompt_tokens:,} prompt + ~{stats.dry_run_completion_tokens:,} "
            f"completion tokens, ~${stats.dry_run_cost_usd:.4f} at batch prices"
        )
    return lines


@pytest.hookimpl(optionalhook=True)
def pytest_evals_terminal_summary(config: pytest.Config, terminalreporter: Any) -> None:
    for line in summary_lines(batch_totals(config)):
        terminalreporter.write_line(line)


def pytest_unconfigure(config: pytest.Config) -> None:
    io_hooks.uninstall(gate.GATE)
    gate.reset()
