"""The advice printed when ``-n`` ran cases that waited on the model endpoint.

A case judged by a remote model spends its time waiting on the network: one process
already keeps ``--evals-concurrency`` requests in flight, so xdist workers add nothing
but their own costs (each worker starts Python and pytest, collects every suite, and
sends every report to the controller). Measured with ``bench/bench_llm.py --pytest-only``
(docs/scale.md), such a run is no faster with ``-n 2`` on an idle machine and slower
when another process competes for the cores. Each worker also keeps its own
concurrency window, so ``-n 2`` doubles the requests in flight against the provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest


def xdist_workers(config: pytest.Config) -> int:
    """How many xdist workers this (controller) run started; 0 without xdist."""
    if hasattr(config, "workerinput") or not config.pluginmanager.has_plugin("dsession"):
        return 0
    # -n N (auto already resolved by xdist), else one worker per --tx.
    return int(getattr(config.option, "numprocesses", 0) or 0) or len(getattr(config.option, "tx", None) or [])


def io_bound_advice(config: pytest.Config, summary: Mapping[str, Any]) -> str | None:
    """The advice line, or None: only for runs under xdist whose cases sent requests
    (or the note of a ``-n`` run that ran in one process, controller/io_bound_run.py)."""
    from pytest_evals.controller.io_bound_run import one_process_note

    note = one_process_note(config)
    if note is not None:
        return note
    workers = xdist_workers(config)
    if workers < 1:
        return None
    llm = summary.get("llm") or {}
    requests = int(llm.get("requests") or 0)
    if requests <= 0:
        return None
    return (
        f"evals: -n {workers} ran cases that waited on the model endpoint ({requests:,} requests): "
        "such suites are no faster with xdist workers and slower when the cores are shared, and "
        f"each worker keeps its own window of {llm.get('concurrency', '?')} requests in flight; "
        "run them without -n (raise --evals-concurrency for more throughput); see docs/scale.md"
    )
