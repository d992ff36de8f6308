"""One asyncio event loop on a background thread, shared by the whole session.

pytest runs items one after another on the main thread. Evaluations that call models
must not: the prefetcher starts each item's evaluation coroutine on this loop ahead of
time, and the item only waits for its own future. Synchronous callers (fixtures in
users' tests) use :meth:`Engine.run` to borrow the same loop, so connection pools,
the concurrency limit and in-flight de-duplication are shared by everybody.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    # asyncio is imported when the loop starts: every pytest run creates an Engine
    # (the plugin's case runner), few of them evaluate anything.
    import asyncio
    import concurrent.futures

T = TypeVar("T")

#: The running session's engine, set by the case runner; the LLM layer reads it here
#: (it sits below the session and must not import it).
ENGINE_KEY = pytest.StashKey["Engine"]()


def session_engine(config: pytest.Config) -> Engine | None:
    """The engine of this pytest process, or None outside a pytest_evals session."""
    return config.stash.get(ENGINE_KEY, None)


class Engine:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is not None:  # fast path: no lock once the loop runs
            return loop
        import asyncio

        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def _serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=_serve, name="pytest-evals-engine", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        import asyncio

        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the engine loop and wait for it (from any other thread)."""
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError("Engine.run() called from the engine loop; await instead")
        return self.submit(coro).result(timeout)

    def close(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        import asyncio

        async def _drain() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await loop.shutdown_asyncgens()

        # best effort at interpreter shutdown
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(_drain(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
