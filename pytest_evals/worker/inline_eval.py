"""Evaluate a case on pytest's own thread when it will not wait on anything.

The prefetcher overlaps model calls by running evaluations on the engine's loop
thread. When every answer is already in the cache there is nothing to overlap, and
the two threads only trade the GIL between CPU cores: measured on a 10,000-case
cached HaluEval run, an evaluation cost 340 us on the engine thread against 145 us
inline, and the whole run took a third longer. So a task that opts in
(``Task.inline_cached``) is first evaluated inline; code that is about to do I/O calls
:func:`require_io`, which ends the attempt, and the session switches to prefetching
for the rest of the run.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Coroutine
from typing import Any


class NeedsIO(BaseException):
    """Raised inside an inline attempt where the evaluation would wait on I/O.

    A BaseException so that tasks' own ``except Exception`` handlers (which turn
    failures into error results) let it through.
    """


#: Undo actions of the running attempt (None: not in an attempt).
_attempt: contextvars.ContextVar[list[Callable[[], None]] | None] = contextvars.ContextVar(
    "pytest_evals_inline_attempt", default=None
)


def require_io() -> None:
    """Called just before real I/O (a request, a subprocess): ends an inline attempt."""
    if _attempt.get() is not None:
        raise NeedsIO


def on_abort(undo: Callable[[], None]) -> None:
    """Register how to take back a side effect (a counted cache hit) if the attempt ends."""
    undos = _attempt.get()
    if undos is not None:
        undos.append(undo)


def attempt(coro: Coroutine[Any, Any, Any]) -> tuple[bool, Any]:
    """Run ``coro`` to completion on this thread if it never waits: (completed, value).

    Not completed means it needed I/O (it called :func:`require_io`, or awaited
    something that suspends); its counted side effects are undone.
    """
    undos: list[Callable[[], None]] = []

    def run() -> tuple[bool, Any]:
        _attempt.set(undos)
        try:
            coro.send(None)
        except StopIteration as stop:
            return True, stop.value
        except NeedsIO:
            return False, None
        coro.close()  # it suspended: only an event loop can resume it
        return False, None

    # A copy of the context: the evaluation's context variables (its usage counter,
    # the attempt marker) must not leak into pytest's thread.
    done, value = contextvars.copy_context().run(run)
    if not done:
        for undo in reversed(undos):
            undo()
    return done, value
