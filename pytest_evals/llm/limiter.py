"""A concurrency limit that shrinks while the server refuses and grows back after.

Additive increase, multiplicative decrease (AIMD), as TCP does with its window: every
throttled reply (429, or 503 "overloaded") halves the number of requests allowed in
flight, at most once per ``cooldown`` seconds so that one burst of refusals from
requests already in flight counts once; every success adds ``1/limit``, so the limit
grows by about one per round trip until it is back at the configured maximum.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque


class AdaptiveLimiter:
    def __init__(self, maximum: int, *, minimum: int = 1, cooldown: float = 0.5) -> None:
        if maximum < 1:
            raise ValueError(f"concurrency must be at least 1, got {maximum}")
        self.maximum = maximum
        self.minimum = max(1, min(minimum, maximum))
        self.cooldown = cooldown
        self.limit = float(maximum)
        self.in_flight = 0
        #: Lowest limit reached (reported in the summary: "throttled down to N").
        self.lowest = maximum
        self.peak_in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._last_decrease = -1e9

    @property
    def current(self) -> int:
        return max(self.minimum, int(self.limit))

    async def acquire(self) -> None:
        if self.in_flight < self.current and not self._waiters:
            self._take()
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                # We were granted a slot and cancelled in the same tick: hand it on.
                self.release()
            else:
                self._waiters.remove(fut)
            raise

    def _take(self) -> None:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.current:
            fut = self._waiters.popleft()
            if not fut.done():
                self._take()
                fut.set_result(None)

    def on_success(self) -> None:
        if self.limit < self.maximum:
            self.limit = min(float(self.maximum), self.limit + 1.0 / self.limit)
            self._wake()

    def on_throttle(self) -> None:
        now = time.monotonic()
        if now - self._last_decrease < self.cooldown:
            return
        self._last_decrease = now
        self.limit = max(float(self.minimum), self.limit / 2)
        self.lowest = min(self.lowest, self.current)
