"""User code that tries to leave: ``SystemExit``, ``KeyboardInterrupt``, other BaseExceptions.

A click or argparse ``main()`` used as a target raises ``SystemExit``; a target or a
judge may raise ``KeyboardInterrupt`` or a BaseException of its own. Escaping the case,
any of them would stop the engine loop (asyncio re-raises ``SystemExit`` and
``KeyboardInterrupt`` out of the loop) or exit pytest with the target's status, so the
exit code would no longer be the summary's verdict. They are that case's ERROR instead.

Two kinds of BaseException are not user code's and must pass: the package's own control
flow (an inline attempt that needs I/O, a batch round's pending request, a deadline),
recognised by the module that defines it, and a ``KeyboardInterrupt`` typed by a person.
Python delivers SIGINT to the main thread only, so code on other threads never sees a
person's interrupt; on the main thread (cases evaluated inline) :func:`watch_interrupts`
counts the SIGINTs the process received, and a ``KeyboardInterrupt`` raised after one
is the person's.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

#: SIGINTs this process received while watched.
_sigints = 0

_PACKAGE = __name__.split(".", 1)[0] + "."


def watch_interrupts() -> Callable[[], None]:
    """Count SIGINTs, then handle them as before; returns what undoes it.

    Only the main thread may set signal handlers; elsewhere, or when SIGINT is ignored
    or left to the system (nothing raises ``KeyboardInterrupt`` then), nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        return _nothing
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        return _nothing
    handler_previous: Callable[[int, FrameType | None], Any] = previous

    def counting(signum: int, frame: FrameType | None) -> Any:
        global _sigints
        _sigints += 1
        return handler_previous(signum, frame)

    signal.signal(signal.SIGINT, counting)

    def undo() -> None:
        global _sigints
        if signal.getsignal(signal.SIGINT) is counting:
            signal.signal(signal.SIGINT, previous)
        _sigints = 0  # the next run in this process (pytester) starts uninterrupted

    return undo


def _nothing() -> None:
    return None


def person_interrupted() -> bool:
    """True once a watched process received SIGINT."""
    return _sigints > 0


def is_code_escape(exc: BaseException) -> bool:
    """True when ``exc`` (not an ``Exception``) was raised by user code to leave, and so
    becomes the case's error; False for what must go on propagating: cancellation,
    generator closing, the package's own control flow and a person's interrupt."""
    if isinstance(exc, Exception | GeneratorExit):
        return False
    # Looked up, not imported: a run without suites never loads asyncio, and without it
    # no task can have been cancelled.
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None and isinstance(exc, asyncio.CancelledError):
        return False
    if type(exc).__module__.startswith(_PACKAGE):
        return False
    return not (isinstance(exc, KeyboardInterrupt) and person_interrupted())


def describe_escape(exc: BaseException) -> str:
    """``SystemExit: 3``, ``KeyboardInterrupt``: the exception as a case message says it."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
