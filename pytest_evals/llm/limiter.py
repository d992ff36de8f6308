"""A concurrency limit that shrinks while the server is overloaded and grows back after.

Additive increase, multiplicative decrease (AIMD), as TCP does with its window: every
throttled reply (429, or 503 "overloaded") halves the number of requests allowed in
flight, at most once per ``cooldown`` seconds so that one burst of refusals from
requests already in flight counts once; every success adds ``1/limit``, so the limit
grows by about one per round trip until it is back at the configured maximum.

A server that answers one request at a time (llama.cpp with one slot) never says 429: it
queues, and every queued request's deadline runs while it waits. So the attempt deadline
is also the limiter's yardstick (when it is given one):

- slow start: the limit starts small and grows by one per success (doubling each round
  trip) while replies come back within a quarter of the deadline, so a queueing endpoint
  never gets the burst. A reply that took ``t`` bounds one request's work at ``t``
  whatever queue it waited in, so even a server working one request at a time answers
  ``deadline / (4 t)`` requests in flight within a quarter of the deadline: the limit
  jumps there at once when that is higher (a 100 ms reply under a 60 s deadline: 150, so
  a fast endpoint is at full concurrency after its first reply instead of three round
  trips later);
- a success that took more than half the deadline shrinks the limit in proportion, and
  one past a quarter of it stops the growth: latency near the deadline is overload even
  when every request succeeds;
- a timeout or a refused connection is overload too: the limit falls to what the server
  completed in the last deadline's worth of time, halved (Little's law: that many in
  flight wait about half a deadline), or is halved when nothing completed.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque


class AdaptiveLimiter:
    def __init__(
        self,
        maximum: int,
        *,
        minimum: int = 1,
        cooldown: float = 0.5,
        deadline: float | None = None,
        initial: int | None = None,
    ) -> None:
        if maximum < 1:
            raise ValueError(f"concurrency must be at least 1, got {maximum}")
        self.maximum = maximum
        self.minimum = max(1, min(minimum, maximum))
        self.cooldown = cooldown
        #: The attempt deadline latencies are measured against (None: latency is ignored).
        self.deadline = deadline if deadline is not None and deadline > 0 else None
        start = maximum if initial is None else max(self.minimum, min(initial, maximum))
        self.limit = float(start)
        #: Growing by one per success (until the first sign of load).
        self.slow_start = start < maximum
        #: Completion times of recent successes (for the Little's-law cut on a timeout).
        self._completions: deque[float] = deque(maxlen=4096)
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

    def on_success(self, latency: float | None = None) -> None:
        now = time.monotonic()
        self._completions.append(now)
        deadline = self.deadline
        if deadline is not None and latency is not None and latency > deadline / 4:
            # Replies near the deadline: the server queues. Stop growing; shrink in
            # proportion past half the deadline (counted once per cooldown).
            self.slow_start = False
            if latency > deadline / 2 and now - self._last_decrease >= self.cooldown:
                self._decrease(self.limit * (deadline / 2) / latency, now)
            return
        if self.limit < self.maximum:
            step = 1.0 if self.slow_start else 1.0 / self.limit
            grown = self.limit + step
            if self.slow_start and deadline is not None and latency is not None and latency > 0:
                # Safe even for a server that works one request at a time (see above).
                grown = max(grown, deadline / (4 * latency))
            self.limit = min(float(self.maximum), grown)
            if self.limit >= self.maximum:
                self.slow_start = False
            self._wake()

    def cap(self, maximum: int) -> None:
        """Lower the maximum to what the server says it works on at once (its slots):
        requests past them would only wait in its queue with their deadlines running."""
        maximum = max(self.minimum, maximum)
        if maximum >= self.maximum:
            return
        self.maximum = maximum
        self.limit = min(self.limit, float(maximum))
        if self.limit >= maximum:
            self.slow_start = False
        self.lowest = min(self.lowest, self.current)

    def on_overload(self) -> None:
        """A timeout or refused connection: fall to what the server is seen to sustain."""
        now = time.monotonic()
        self.slow_start = False
        if now - self._last_decrease < self.cooldown:
            return
        deadline = self.deadline
        if deadline is None:
            self._decrease(self.limit / 2, now)
            return
        done = sum(1 for t in self._completions if now - t <= deadline)
        self._decrease(self.limit / 2 if not done else min(self.limit / 2, done / 2), now)

    def _decrease(self, target: float, now: float) -> None:
        self._last_decrease = now
        self.limit = max(float(self.minimum), min(self.limit, target))
        self.lowest = min(self.lowest, self.current)

    def on_throttle(self) -> None:
        now = time.monotonic()
        self.slow_start = False
        if now - self._last_decrease < self.cooldown:
            return
        self._decrease(self.limit / 2, now)
