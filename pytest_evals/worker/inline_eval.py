"""Evaluate a case on pytest's own thread when it will not wait on anything.

The prefetcher overlaps model calls by running evaluations on the engine's loop
thread. When every answer is already in the cache there is nothing to overlap, and
the two threads only trade the GIL between CPU cores: measured on a 10,000-case
cached HaluEval run, an evaluation cost 340 us on the engine thread against 145 us
inline, and the whole run took a third longer. So a task that opts in
(``Task.inline_cached``) is first evaluated inline; code that is about to do I/O calls
:func:`require_io`, which ends the attempt, and the session switches to prefetching
for the rest of the run. The LLM layer, which knows no runner, reaches it through the
hook an attempt installs in :mod:`pytest_evals.llm.io_hooks`.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Coroutine
from typing import Any

from pytest_evals.llm import io_hooks


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


class _AttemptHook:
    """The LLM layer's I/O, seen from an attempt: it ends the attempt (a cache miss, the
    offline judge's encoding), and the hits it counted are taken back with it."""

    def before_io(self, namespace: str, key: str | None, body: Any) -> None:
        require_io()

    def counted(self, undo: Callable[[], None]) -> None:
        on_abort(undo)


_HOOK = _AttemptHook()


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

    # Installed for the attempt only; the engine thread, which may call it meanwhile,
    # is outside every attempt (the marker below is a context variable).
    io_hooks.install(_HOOK)
    try:
        # A copy of the context: the evaluation's context variables (its usage counter,
        # the attempt marker) must not leak into pytest's thread.
        done, value = contextvars.copy_context().run(run)
    finally:
        io_hooks.uninstall(_HOOK)
    if not done:
        for undo in reversed(undos):
            undo()
    return done, value
