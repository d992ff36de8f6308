"""The batcher turns many instances' concurrent requests into few model calls."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import pytest

from pytest_evals.families.harpia.batcher import Batcher


class Recorder:
    def __init__(self, delay: float = 0.0, fail_first: bool = False) -> None:
        self.calls: list[list[int]] = []
        self.delay = delay
        self.fail_first = fail_first
        self.threads: set[str] = set()

    def __call__(self, items: Sequence[int]) -> list[int]:
        self.threads.add(threading.current_thread().name)
        self.calls.append(list(items))
        if self.fail_first and len(self.calls) == 1:
            raise RuntimeError("model exploded")
        time.sleep(self.delay)
        return [i * 10 for i in items]


def test_concurrent_submissions_share_one_call() -> None:
    compute = Recorder()

    async def main() -> list[int]:
        batcher: Batcher[int, int] = Batcher(compute, linger=0.02)
        done = await asyncio.gather(*(batcher.submit(i) for i in range(200)))
        assert {d.batch_size for d in done} == {200}
        return [d.output for d in done]

    assert asyncio.run(main()) == [i * 10 for i in range(200)]
    assert compute.calls == [list(range(200))]
    # the model runs on a worker thread, never on the event loop
    assert threading.main_thread().name not in compute.threads


def test_late_arrivals_form_the_next_batch_and_max_batch_splits() -> None:
    compute = Recorder(delay=0.2)

    async def main() -> None:
        batcher: Batcher[int, int] = Batcher(compute, linger=0.01, max_batch=30)
        first = [asyncio.ensure_future(batcher.submit(i)) for i in range(50)]
        await asyncio.sleep(0.1)  # the first batch is computing now
        late = [asyncio.ensure_future(batcher.submit(i)) for i in range(50, 60)]
        await asyncio.gather(*first, *late)
        assert batcher.batch_sizes == [30, 30]

    asyncio.run(main())
    assert compute.calls[0] == list(range(30))
    assert sorted(compute.calls[1]) == list(range(30, 60))


def test_a_failing_batch_fails_its_items_and_the_next_batch_runs() -> None:
    compute = Recorder(fail_first=True)

    async def main() -> None:
        batcher: Batcher[int, int] = Batcher(compute, linger=0.01)
        outcomes = await asyncio.gather(*(batcher.submit(i) for i in range(5)), return_exceptions=True)
        assert all(isinstance(o, RuntimeError) and "model exploded" in str(o) for o in outcomes)
        again = await batcher.submit(7)
        assert again.output == 70

    asyncio.run(main())


def test_prepare_runs_once_and_is_reported_as_setup_time() -> None:
    prepared: list[float] = []
    compute = Recorder()

    def prepare() -> None:
        prepared.append(time.perf_counter())
        time.sleep(0.2)

    async def main() -> None:
        batcher: Batcher[int, int] = Batcher(compute, prepare=prepare, linger=0.01)
        first = await asyncio.gather(*(batcher.submit(i) for i in range(4)))
        second = await batcher.submit(9)
        assert sum(d.setup for d in first) == pytest.approx(0.2, abs=0.1)
        assert second.setup == 0.0
        assert all(d.elapsed < 0.1 for d in first)

    asyncio.run(main())
    assert len(prepared) == 1


def test_a_failing_prepare_fails_the_waiting_items() -> None:
    def prepare() -> None:
        raise OSError("no model on disk")

    async def main() -> None:
        batcher: Batcher[int, int] = Batcher(Recorder(), prepare=prepare, linger=0.01)
        outcomes = await asyncio.gather(*(batcher.submit(i) for i in range(3)), return_exceptions=True)
        assert all(isinstance(o, OSError) for o in outcomes)

    asyncio.run(main())
