"""Waiting out an endpoint that went away (a local server restarting), within a bound.

A refused or dropped connection usually means the server is restarting, not that the
request is wrong. Retried with the ordinary backoff, every request in flight burns its
attempts in a few seconds and every remaining case becomes an ERROR. Instead, the first
connection failure closes this gate: requests stop going on the wire, one recovery task
asks the endpoint (``GET /models``, endpoint_probe.py) with growing pauses, and when it
answers the gate opens and the held requests go again. An attempt that failed because
the endpoint was down does not count against ``--evals-max-retries``.

The bound: ``outage_wait`` seconds (``--evals-outage-wait``, default 120) once the
endpoint has answered in this run; ``STARTUP_WAIT`` seconds while it never has (a wrong
URL should fail the run in seconds, not minutes). Past it the gate stays shut and every
request fails at once with the same one-line reason.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from pytest_evals.llm.endpoint_probe import EndpointInfo

#: Seconds an endpoint that never answered in this run is waited for (a server still
#: starting); a server that did answer is waited for ``outage_wait``.
STARTUP_WAIT = 10.0
#: Pauses between reachability checks grow from the first to the last value.
FIRST_PAUSE, LAST_PAUSE = 0.25, 2.0


class EndpointDown(Exception):
    """The endpoint stayed unreachable past the bound; ``reason`` is one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class EndpointGate:
    """One per event loop (its Event and recovery task belong to that loop)."""

    def __init__(
        self,
        check: Callable[[], Awaitable[EndpointInfo]],
        *,
        outage_wait: float,
        startup_wait: float = STARTUP_WAIT,
        where: str = "the endpoint",
    ) -> None:
        self._check = check
        self.outage_wait = max(0.0, outage_wait)
        self.startup_wait = max(0.0, min(startup_wait, self.outage_wait))
        self.where = where
        self._open = asyncio.Event()
        self._open.set()
        self._recovery: asyncio.Task[None] | None = None
        #: The endpoint answered at least once (a request or a check).
        self.reached = False
        #: Outages seen: bumped when a check found the endpoint down (not on a reset
        #: after which it answered at once). Requests compare it to tell a free retry.
        self.generation = 0
        #: Seconds the gate was shut, in total.
        self.waited = 0.0
        self._dead: str | None = None

    @property
    def closed(self) -> bool:
        return not self._open.is_set()

    def reached_now(self) -> None:
        self.reached = True

    async def wait(self) -> None:
        """Return when requests may go; raise EndpointDown past the bound."""
        if self._dead is not None:
            raise EndpointDown(self._dead)
        if not self._open.is_set():
            await self._open.wait()
            if self._dead is not None:
                raise EndpointDown(self._dead)

    def connection_failed(self, cause: str) -> None:
        """A request could not connect (or was cut): hold everything and check."""
        if self._dead is not None or not self._open.is_set():
            return
        self._open.clear()
        self._recovery = asyncio.get_running_loop().create_task(self._recover(cause))

    async def _recover(self, cause: str) -> None:
        started = time.monotonic()
        bound = self.outage_wait if self.reached else self.startup_wait
        pause = FIRST_PAUSE
        down = False
        try:
            while True:
                info = await self._check()
                if info.reachable:
                    self.reached = True
                    break
                if not down:
                    down = True
                    self.generation += 1
                cause = info.error or cause
                left = bound - (time.monotonic() - started)
                if left <= 0:
                    since = "" if self.reached else " (it never answered in this run)"
                    self._dead = (
                        f"{self.where} unreachable for {bound:g}s{since}: {cause}; "
                        "is the server running? (--evals-outage-wait sets how long a "
                        "restart is waited for)"
                    )
                    break
                await asyncio.sleep(min(pause, left))
                pause = min(LAST_PAUSE, pause * 1.5)
        finally:
            self.waited += time.monotonic() - started
            self._open.set()

    async def aclose(self) -> None:
        task = self._recovery
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
