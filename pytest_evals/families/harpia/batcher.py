"""Collect many instances' requests into one model call.

Items run one after another, but the session starts their evaluations ahead of time on
one event loop. Each evaluation of a model-backed metric submits its instance here and
waits; the batcher lets submissions gather until none arrives for ``linger`` seconds (or
``max_batch`` are waiting), then scores them all in one call on a worker thread. While
a batch computes, new submissions queue for the next one. The first batch also waits for
``prepare`` (the model load), during which the other instances arrive.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


@dataclass(frozen=True)
class Batched(Generic[Out]):
    """One item's output, with its even share of its batch's compute and set-up time."""

    output: Out
    elapsed: float
    setup: float
    batch_size: int


class Batcher(Generic[In, Out]):
    def __init__(
        self,
        compute: Callable[[Sequence[In]], Sequence[Out]],
        *,
        prepare: Callable[[], object] | None = None,
        max_batch: int = 4096,
        linger: float = 0.05,
    ) -> None:
        self._compute = compute
        self._prepare = prepare
        self.max_batch = max_batch
        self.linger = linger
        self._pending: list[tuple[In, asyncio.Future[Batched[Out]]]] = []
        self._worker: asyncio.Task[None] | None = None
        self._prepared = False
        #: Sizes of the batches computed so far (for tests and the benchmark).
        self.batch_sizes: list[int] = []

    async def submit(self, item: In) -> Batched[Out]:
        """``item``'s output once its batch is computed."""
        future: asyncio.Future[Batched[Out]] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.ensure_future(self._run())
        return await future

    async def _run(self) -> None:
        setup = 0.0
        if not self._prepared and self._prepare is not None:
            started = time.perf_counter()
            try:
                await asyncio.to_thread(self._prepare)
            except BaseException as exc:
                self._fail(self._take(len(self._pending)), exc)
                if not isinstance(exc, Exception):
                    raise
                return
            setup = time.perf_counter() - started
        self._prepared = True
        while self._pending:
            await self._gather()
            batch = self._take(self.max_batch)
            started = time.perf_counter()
            try:
                outputs = await asyncio.to_thread(self._compute, [item for item, _ in batch])
            except BaseException as exc:
                self._fail(batch, exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            share = (time.perf_counter() - started) / len(batch)
            setup_share, setup = setup / len(batch), 0.0
            self.batch_sizes.append(len(batch))
            for (_, future), output in zip(batch, outputs, strict=True):
                if not future.done():
                    future.set_result(Batched(output, share, setup_share, len(batch)))

    async def _gather(self) -> None:
        """Wait while submissions keep arriving (up to a full batch)."""
        seen = -1
        while len(self._pending) != seen and len(self._pending) < self.max_batch:
            seen = len(self._pending)
            await asyncio.sleep(self.linger)

    def _take(self, n: int) -> list[tuple[In, asyncio.Future[Batched[Out]]]]:
        batch, self._pending = self._pending[:n], self._pending[n:]
        return batch

    @staticmethod
    def _fail(batch: list[tuple[In, asyncio.Future[Batched[Out]]]], exc: BaseException) -> None:
        for _, future in batch:
            if future.done():
                continue
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
