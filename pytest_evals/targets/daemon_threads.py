"""Threads for blocking target calls that never hold the process open.

A sync Python target runs off the event loop. ``asyncio.to_thread`` would use the loop's
default executor, whose threads the interpreter joins at exit: a target stuck in a
``sleep(1000)`` or a hung socket would keep pytest alive after the case timed out, or
after a person pressed Ctrl-C, until it returned. These threads are daemons: pytest
exits when its work is done. As many run at once as the default executor would allow.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[concurrent.futures.Future[Any], contextvars.Context, Callable[..., Any], tuple[Any, ...]]


class DaemonThreads:
    def __init__(self, size: int | None = None) -> None:
        self.size = size or min(32, (os.cpu_count() or 1) + 4)
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        #: Released by each thread that waits for work: a job finds it without a new thread.
        self._idle = threading.Semaphore(0)

    def submit(self, fn: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        """Run ``fn(*args)`` on a daemon thread, in a copy of the caller's context."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._jobs.put((future, contextvars.copy_context(), fn, args))
        if self._idle.acquire(timeout=0):
            return future
        with self._lock:
            if self._threads < self.size:
                self._threads += 1
                threading.Thread(target=self._work, name="pytest-evals-target", daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            future, context, fn, args = self._jobs.get()
            if future.set_running_or_notify_cancel():
                try:
                    result = context.run(fn, *args)
                except BaseException as exc:  # the caller decides what an escape means
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del future, context, fn, args
            self._idle.release()


#: Shared by every sync target of the process.
THREADS = DaemonThreads()
