"""A per-instance deadline for the reference metrics computed in Python (ROUGE, BLEU, ...).

Their libraries are pure Python, and some are quadratic: ROUGE-L's longest common
subsequence over two 40,000-word texts is 1.6e9 steps, which would hold the run for many
minutes. The computation runs on a daemon thread of its own; when the deadline passes the
caller gets :class:`DeadlineExceeded` at once (the instance is an ERROR, the other
instances go on) and the thread is interrupted: CPython raises an exception in it at its
next bytecode (``PyThreadState_SetAsyncExc``), so it stops instead of burning a core for
the rest of the run. Code stuck inside a C call stops when the call returns; being a
daemon thread it never delays the end of the process. A thread in the middle of an
``import`` is not interrupted until the import is done (an exception there would leave a
half-initialised module in ``sys.modules`` for the rest of the process); the task also
imports each metric's library before its deadline starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from pytest_evals.metrics.reference import MetricError
from pytest_evals.model.errors import ErrorKind

T = TypeVar("T")

#: Default seconds an instance's Python-computed metrics may take together.
DEFAULT_DEADLINE = 60.0


class DeadlineExceeded(MetricError):
    """An instance's metrics did not finish within the per-instance deadline."""

    kind = ErrorKind.TIMEOUT


class _Interrupt(BaseException):
    """Raised inside the worker thread to stop it (never seen outside this module)."""


class _Runner(Generic[T]):
    def __init__(self, fn: Callable[[], T], on_finish: Callable[[], None] | None = None) -> None:
        self._fn = fn
        self._on_finish = on_finish
        self._lock = threading.Lock()
        self._done = False
        self._interrupted = False
        self.finished = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="pytest-evals-metric", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            try:
                value, error = self._fn(), None
            except _Interrupt:
                raise
            except BaseException as exc:  # handed to the caller as it is
                value, error = None, exc
            with self._lock:
                # From here on the thread is never interrupted (see interrupt()).
                self._done = True
            self.value, self.error = value, error
        except _Interrupt:
            self.error = DeadlineExceeded("interrupted at the deadline")
        finally:
            self.finished.set()
            if self._on_finish is not None:
                self._on_finish()

    def interrupt(self) -> None:
        with self._lock:
            ident = self.thread.ident
            if self._done or self._interrupted or ident is None:
                return
            if _importing(ident):
                retry = threading.Timer(0.05, self.interrupt)
                retry.daemon = True
                retry.start()
                return
            self._interrupted = True
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(_Interrupt))

    def outcome(self) -> T:
        if self.error is not None:
            raise self.error
        result: T = self.value
        return result


def _importing(ident: int) -> bool:
    """Whether thread ``ident`` holds an import lock (is executing a module's import)."""
    import importlib._bootstrap as bootstrap

    for ref in list(getattr(bootstrap, "_module_locks", {}).values()):
        lock = ref() if callable(ref) else None
        if lock is not None and getattr(lock, "owner", None) == ident:
            return True
    return False


def _timeout(seconds: float, what: str) -> DeadlineExceeded:
    return DeadlineExceeded(
        f"{what} did not finish within the per-instance deadline of {seconds:g} s "
        "(ini evals_harpia_case_deadline or the suite's case_deadline; 0 disables it)"
    )


def call_with_deadline(fn: Callable[[], T], seconds: float | None, what: str = "the metrics") -> T:
    """``fn()`` on a worker thread, waited for at most ``seconds`` (None or <= 0: no limit)."""
    if not seconds or seconds <= 0:
        return fn()
    runner = _Runner(fn)
    runner.start()
    if not runner.finished.wait(seconds):
        runner.interrupt()
        raise _timeout(seconds, what)
    return runner.outcome()


async def acall_with_deadline(fn: Callable[[], T], seconds: float | None, what: str = "the metrics") -> T:
    """:func:`call_with_deadline` for a coroutine: the event loop keeps running meanwhile."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        def settle() -> None:
            if not future.done():
                future.set_result(None)

        with contextlib.suppress(RuntimeError):  # the loop closed first: nobody waits
            loop.call_soon_threadsafe(settle)

    runner = _Runner(fn, wake)
    runner.start()
    limit = seconds if seconds and seconds > 0 else None
    try:
        await asyncio.wait_for(future, limit)
    except TimeoutError:
        runner.interrupt()
        raise _timeout(seconds or 0.0, what) from None
    except BaseException:
        runner.interrupt()  # cancelled: the session is ending
        raise
    return runner.outcome()
