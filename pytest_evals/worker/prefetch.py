"""Evaluate cases ahead of pytest's item loop, within a bounded window.

Items still run one after another, but each item's evaluation (generation, judge
calls) was started earlier on the engine loop, up to ``window`` cases ahead; an item's
setup only waits for its own result. Under xdist each worker starts only the cases it
owns (see :mod:`pytest_evals.collection.xdist_blocks`); anything else is evaluated on demand.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
import traceback
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from pytest_evals.hardening.code_escapes import describe_escape, is_code_escape
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.case_usage import Usage, current_usage
from pytest_evals.model.errors import (
    CaseInputError,
    ErrorKind,
    EvalsError,
    SkipCase,
    SuiteConfigError,
    error_kind,
)
from pytest_evals.registry.missing_extras import install_hint

if TYPE_CHECKING:
    from pytest_evals.tasks.eval_context import EvalContext
    from pytest_evals.tasks.task_contract import CaseRef, Task


def drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (pure computation) without an event loop."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("drive() needs a coroutine that does not await I/O; use the engine")


def generate_off_hint(target: Any) -> str:
    """Why a suite with a target may find its cases incomplete (``--no-evals-generate``)."""
    shown = target if isinstance(target, str) else "its target"
    return (
        f"\nhint: this suite has a target ({shown}) but runs with generate: false (set by "
        "--no-evals-generate or --evals-set?), so each case must already hold the system's "
        "output; run with generate: true, or point input_path at saved outputs (generated.jsonl)"
    )


async def evaluate_case(task: Task[Any], ref: CaseRef, ctx: EvalContext, index: int) -> CaseResult:
    """Load, (generate,) evaluate one case; every failure becomes an error result."""
    usage = Usage()
    current_usage.set(usage)
    started = time.perf_counter()
    generated: Any = None
    try:
        if ref.error:
            raise CaseInputError(ref.error)
        case = task.load_case(ref)
        if task.config.generate:
            case = await task.generate(case, ref, ctx)
            generated = task.generated_record(case, ref)
        result = await task.evaluate(case, ref, ctx)
    except SkipCase as exc:
        result = task.new_result(ref)
        result.status, result.message, result.error_kind = "skipped", str(exc), ErrorKind.SKIPPED
    except (EvalsError, SuiteConfigError) as exc:
        result = task.new_result(ref)
        result.status, result.message, result.error_kind = "error", str(exc), error_kind(exc)
        if isinstance(exc, CaseInputError) and not task.config.generate and task.config.target:
            result.message += generate_off_hint(task.config.target)
        raw = getattr(exc, "raw_reply", None)
        if raw is not None:
            result.details["raw_reply"] = raw
    except Exception as exc:
        # A bug in a task or a user's target must cost one case, not the run.
        result = task.new_result(ref)
        result.status, result.error_kind = "error", ErrorKind.EXCEPTION
        result.message = f"{type(exc).__name__}: {exc}"
        hint = install_hint(exc)
        if hint is not None:  # an extra not installed: say which, no traceback
            result.error_kind, result.message = ErrorKind.INFRASTRUCTURE, hint
        else:
            result.details["traceback"] = "".join(traceback.format_exception(exc)[-6:])
    except BaseException as exc:
        # SystemExit, KeyboardInterrupt or another BaseException raised by a judge or a
        # task's code: escaping here would stop the engine loop (or pytest) and every
        # case after this one. A person's interrupt and our own control flow pass.
        if not is_code_escape(exc):
            raise
        result = task.new_result(ref)
        result.status, result.error_kind, result.message = "error", ErrorKind.EXCEPTION, describe_escape(exc)
        result.details["traceback"] = "".join(traceback.format_exception(exc)[-6:])
    result.index = index
    if generated is not None:
        result.details["generated"] = generated
    result.usage = usage.to_json()
    result.duration = time.perf_counter() - started
    return result


class Prefetcher:
    """Runs owned cases' evaluations on the engine loop, ``window`` cases ahead."""

    def __init__(self, ctx: EvalContext, window: int) -> None:
        self.ctx = ctx
        self.window = max(1, window)
        self._index: dict[str, int] = {}
        #: The futures of the cases in the window, made by whichever thread asks first
        #: and dropped once delivered. One per case up front was 1.6 kB a case (a Future
        #: holds a Condition): 56 MB at the start of a 35,000-case run.
        self._futures: dict[int, concurrent.futures.Future[CaseResult]] = {}
        self._delivered = bytearray()
        self._released = -1
        self._release_sent = -1
        #: The last case the feeder has started (written by the engine thread only).
        self._started = -1
        self._batch = max(1, min(32, self.window // 8))
        self._sem: asyncio.Semaphore | None = None
        self._feeder: concurrent.futures.Future[None] | None = None

    def start(self, jobs: Sequence[tuple[str, Task[Any], CaseRef, int]]) -> None:
        """``jobs``: (nodeid, task, ref, case index) in the order items will run."""
        if not jobs:
            return
        self._index = {nodeid: i for i, (nodeid, *_rest) in enumerate(jobs)}
        self._delivered = bytearray(len(jobs))
        self._feeder = self.ctx.engine.submit(self._feed(list(jobs)))

    async def _feed(self, jobs: list[tuple[str, Task[Any], CaseRef, int]]) -> None:
        self._sem = asyncio.Semaphore(self.window)
        running: set[asyncio.Task[None]] = set()
        for i, (_nodeid, task, ref, index) in enumerate(jobs):
            await self._sem.acquire()
            self._started = i
            t = asyncio.ensure_future(self._one(i, task, ref, index))
            running.add(t)
            t.add_done_callback(running.discard)
            if i < self.window:
                # Filling the first window is ~1 ms of CPU per case (load, prompt, keys,
                # claim): one case per loop turn lets the replies of the first requests
                # be read (and their slots go to the next requests) while it fills, not
                # after it. Starting 16 per turn, the first case of 2,000 judge prompts at
                # 100 ms was done 0.36 s after the start; one per turn, 0.12 s, and the
                # last item ~50 ms sooner (medians of 5 alternating pairs).
                await asyncio.sleep(0)
        if running:
            await asyncio.gather(*running, return_exceptions=True)

    def _future(self, i: int) -> concurrent.futures.Future[CaseResult]:
        fut = self._futures.get(i)
        if fut is None:
            # setdefault is one atomic step: the engine thread and pytest's thread may
            # both ask for case i first, and must get the same future.
            fut = self._futures.setdefault(i, concurrent.futures.Future())
        return fut

    async def _one(self, i: int, task: Task[Any], ref: CaseRef, index: int) -> None:
        fut = self._future(i)
        try:
            result = await evaluate_case(task, ref, self.ctx, index)
        except BaseException as exc:  # cancelled at shutdown
            if not fut.done():
                fut.set_exception(exc)
            raise
        if not fut.done():
            fut.set_result(result)

    def owns(self, nodeid: str) -> bool:
        return nodeid in self._index

    def delivered(self, nodeid: str) -> bool:
        """Its result was already handed out: a second request (a rerun of the item,
        pytest-rerunfailures) has nothing left to wait for here."""
        return self._delivered[self._index[nodeid]] == 1

    def _release_upto(self, i: int) -> None:
        # Items consume in order; a skipped or deselected item never consumes, so
        # consuming item i frees the slots of every earlier item too.
        assert self._sem is not None
        while self._released < i:
            self._released += 1
            self._sem.release()

    def _send_release(self, i: int) -> None:
        if i > self._release_sent:
            self._release_sent = i
            self.ctx.engine.loop.call_soon_threadsafe(self._release_upto, i)

    def result(self, nodeid: str, timeout: float) -> CaseResult:
        i = self._index[nodeid]
        fut = self._future(i)
        if not fut.done() and i > self._started:
            # The feeder is waiting for slots to reach this case: free the slots of
            # everything already consumed before waiting. A case already started needs
            # none: waking the loop thread for it costs a system call and a GIL hand-over,
            # and items that caught up with the network did it once each (a 2,000-case
            # cold run: 411 wake-ups, now 62); its slots go back in batches below.
            self._send_release(i - 1)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(
                f"no result after {timeout:g} s (raise ini evals_case_timeout if cases are this slow)"
            ) from None
        finally:
            self._delivered[i] = 1
            self._futures.pop(i, None)
            # Waking the loop thread costs a system call; when results are ready ahead
            # of the items, hand slots back in batches instead of one per item.
            if i - self._release_sent >= self._batch:
                self._send_release(i)

    def cancel(self) -> None:
        if self._feeder is not None:
            self._feeder.cancel()

