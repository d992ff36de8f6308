"""Normalisation statistics computed from a baseline system prompt, once per session.

The baseline needs data from outside any one case: the policy's responses to the
suite's user prompts under a neutral system prompt, rated by every rater. So the first
case to need it computes it and every other case awaits the same asyncio task (the
process's cache). Under xdist the workers are separate processes: the first worker to
create a claim file (``O_EXCL``) in the temp directory, named after the session's
``testrunuid``, computes it and publishes the result atomically; the others poll for that
file. A failed baseline is published too, so every case reports the same error instead
of each worker retrying it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import tempfile
import time
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pytest_evals.families.redteam.rating import NormStats
from pytest_evals.model.errors import (
    CaseInputError,
    ErrorKind,
    EvalsError,
    InfrastructureError,
    JudgeError,
    TargetError,
    error_kind,
)

SHARED_DIR_NAME = "pytest-evals-redteam"
#: Claim and result files older than this are removed when a new session claims.
STALE_AFTER_S = 7 * 24 * 3600
_ERRORS: dict[ErrorKind, type[EvalsError]] = {
    ErrorKind.JUDGE: JudgeError,
    ErrorKind.INFRASTRUCTURE: InfrastructureError,
    ErrorKind.TARGET: TargetError,
    ErrorKind.INPUT: CaseInputError,
}

Compute = Callable[[], Awaitable[dict[str, NormStats]]]

#: event loop -> key -> the task computing that baseline in this process. Keyed by the
#: loop object (weakly), not its id: a later session's loop may reuse a dead loop's id.
_TASKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Task[dict[str, NormStats]]]] = (
    weakref.WeakKeyDictionary()
)


def baseline_key(parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()


async def once_per_process(key: str, compute: Compute) -> dict[str, NormStats]:
    """Run ``compute`` once per (loop, key); concurrent callers share its result or error."""
    tasks = _TASKS.setdefault(asyncio.get_running_loop(), {})
    task = tasks.get(key)
    if task is None:
        task = asyncio.ensure_future(compute())
        tasks[key] = task
    # shield: one cancelled case must not cancel the baseline for all the others
    return await asyncio.shield(task)


def _encode(stats: dict[str, NormStats]) -> dict[str, Any]:
    return {"ok": True, "stats": {name: s.to_json() for name, s in stats.items()}}


def _decode(payload: dict[str, Any], path: Path) -> dict[str, NormStats]:
    if not payload.get("ok"):
        cls = _ERRORS.get(ErrorKind.of(payload.get("kind")), InfrastructureError)
        raise cls(f"baseline (computed by another worker): {payload.get('error')}")
    return {name: NormStats.from_json(s) for name, s in payload["stats"].items()}


def _clean_stale(directory: Path) -> None:
    cutoff = time.time() - STALE_AFTER_S
    for path in directory.glob("baseline-*"):
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < cutoff:
                path.unlink()


async def shared_across_workers(
    key: str, run_uid: str | None, compute: Compute, timeout: float, directory: Path | None = None
) -> dict[str, NormStats]:
    """One computation per test run across xdist workers (``run_uid`` = xdist's testrunuid)."""
    if run_uid is None:
        return await compute()
    from pytest_evals.families.redteam.store import atomic_write_json

    directory = directory or Path(tempfile.gettempdir()) / SHARED_DIR_NAME
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"baseline-{run_uid}-{key[:24]}"
    claim, result = directory / f"{stem}.claim", directory / f"{stem}.json"
    try:
        os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        owner = True
    except FileExistsError:
        owner = False
    if owner:
        _clean_stale(directory)
        try:
            stats = await compute()
        except EvalsError as exc:
            kind = error_kind(exc) if hasattr(exc, "kind") else ErrorKind.INFRASTRUCTURE
            payload = {"ok": False, "kind": str(kind), "error": str(exc)}
            await asyncio.to_thread(atomic_write_json, result, payload)
            raise
        except Exception as exc:
            payload = {"ok": False, "kind": str(ErrorKind.INFRASTRUCTURE), "error": f"{type(exc).__name__}: {exc}"}
            await asyncio.to_thread(atomic_write_json, result, payload)
            raise
        await asyncio.to_thread(atomic_write_json, result, _encode(stats))
        return stats
    deadline = time.monotonic() + timeout
    while not result.exists():
        if time.monotonic() > deadline:
            raise InfrastructureError(
                f"baseline: another xdist worker claimed it ({claim}) but published no result within "
                f"{timeout:g} s (did it crash? raise baseline.timeout if the baseline is this slow)"
            )
        await asyncio.sleep(0.2)
    payload = json.loads(result.read_text(encoding="utf-8"))
    return _decode(payload, result)
