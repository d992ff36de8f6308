"""Where the LLM client meets batch mode: :data:`GATE`, the I/O hook batch mode installs.

The client calls its :meth:`BatchGate.before_io` on every cache miss, through
:mod:`pytest_evals.llm.io_hooks`, once the batch phase has installed it (the worker's
batch plugin; it stays installed until the end of the pytest run). While a gather round
evaluates a case, the gate records the request the case is about to send and raises
:class:`BatchPending`, which ends that case's evaluation (a BaseException, like the
inline attempt's ``NeedsIO``, so tasks' ``except Exception`` lets it through). Outside a
gather round it only acts on keys the batch phase gave up on: their cases become ERRORs
of kind ``infrastructure`` rather than paying for a live request the user asked to
batch. Keys marked for a live retry (``--evals-batch-retry live``) pass.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pytest_evals.llm.call_errors import LLMError


class BatchPending(BaseException):
    """The evaluation needs an answer that a batch will provide."""


class Recorder(Protocol):
    def add(self, namespace: str, key: str, body: Mapping[str, Any]) -> None: ...


#: The gather round's recorder (None: not gathering).
_recorder: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar(
    "pytest_evals_batch_recorder", default=None
)
#: key -> why its batch lines failed for good (this process; loaded from the run marker).
_failed: dict[str, str] = {}
#: keys the next round asks interactively.
_live: set[str] = set()


class BatchGate:
    """The :class:`~pytest_evals.llm.io_hooks.IOHook` of batch mode."""

    def before_io(self, namespace: str, key: str | None, body: Mapping[str, Any] | None) -> None:
        if key is None or body is None:
            return  # not a model request (the offline judge): nothing a batch answers
        if not _failed and _recorder.get() is None:
            return  # the common case: no batch phase is gathering or gave up on keys
        reason = _failed.get(key)
        if reason is not None:
            raise LLMError(f"batch mode: {reason}", cause=reason)
        if key in _live:
            return
        recorder = _recorder.get()
        if recorder is not None:
            recorder.add(namespace, key, body)
            raise BatchPending

    def counted(self, undo: Callable[[], None]) -> None:
        pass  # a gather round restores the client's counters itself (BatchPhase._gather)


GATE = BatchGate()


def gathering(recorder: Recorder) -> contextvars.Token[Recorder | None]:
    """Make the current context (and tasks started from it) record instead of asking."""
    return _recorder.set(recorder)


def stop_gathering(token: contextvars.Token[Recorder | None]) -> None:
    _recorder.reset(token)


def mark_failed(failures: Mapping[str, str]) -> None:
    _failed.update(failures)


def mark_live(keys: set[str]) -> None:
    _live.update(keys)


def reset() -> None:
    """Forget this process's failed and live keys (end of a pytest run)."""
    _failed.clear()
    _live.clear()
