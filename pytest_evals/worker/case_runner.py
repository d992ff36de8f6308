"""The worker side: evaluates the case items this process runs.

One :class:`CaseRunner` per pytest process that runs items (a plain run, or each
xdist worker), reached with :func:`get_runner`. :meth:`CaseRunner.result_for` is the
one interface over the four ways a case is run:

- *drive*: the task needs no I/O (scores saved outputs): run the coroutine directly;
- *inline*: the task's answers are usually cached: try the case on pytest's thread
  until one case needs I/O (see :mod:`pytest_evals.worker.inline_eval`);
- *prefetch*: from then on, the case and the ones after it in its block run ahead on
  the engine loop (see :mod:`pytest_evals.worker.prefetch` and :mod:`pytest_evals.collection.xdist_blocks`);
- *engine*: anything not prefetched runs on the engine loop on demand.

It keeps no results: each result rides on its test report to the controller.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.collection.xdist_blocks import BLOCKS_FLAG, block_rest, is_case_nodeid
from pytest_evals.hardening.code_escapes import watch_interrupts
from pytest_evals.llm.event_loop import ENGINE_KEY, Engine
from pytest_evals.tasks.eval_context import EvalContext

if TYPE_CHECKING:
    from pytest_evals.model.case_result import CaseResult
    from pytest_evals.tasks.case_job import CaseJob
    from pytest_evals.worker.prefetch import Prefetcher

# The runner (asyncio) is imported by the first case, not by every pytest run that
# creates this object.

RUNNER_KEY = pytest.StashKey["CaseRunner"]()


def get_runner(config: pytest.Config) -> CaseRunner:
    return config.stash[RUNNER_KEY]


class CaseRunner:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.engine = Engine()
        config.stash[ENGINE_KEY] = self.engine
        self.ctx = EvalContext(config, self.engine)
        self.case_timeout = float(config.getini("evals_case_timeout") or 900)
        #: Cases are tried on pytest's thread until one needs I/O (see inline_eval.py).
        self._inline = True
        #: Cases this process evaluated on pytest's thread (the rest went to the engine).
        self.inline_cases = 0
        self._prefetchers: list[Prefetcher] = []
        self._prefetched: dict[str, Prefetcher] = {}
        self._positions: list[object] | None = None
        self._warming = False
        self._evaluate: Callable[..., Coroutine[Any, Any, CaseResult]] | None = None
        self._attempt: Callable[[Coroutine[Any, Any, Any]], tuple[bool, Any]] | None = None
        # A KeyboardInterrupt raised by a target is its case's error; one typed by a
        # person must still interrupt: count SIGINTs to tell them apart.
        self._unwatch = watch_interrupts()

    def result_for(self, job: CaseJob, upcoming: Sequence[object]) -> CaseResult:
        task = job.task
        if not task.needs_engine():
            return self._drive(job)
        if not self._prefetchers and self._inline:
            result = self._inline_attempt(job)
            if result is not None:
                return result
            # This case waits on I/O: overlap it and the rest from now on.
            self._inline = False
        prefetcher = self._prefetched.get(job.nodeid)
        if prefetcher is not None and prefetcher.delivered(job.nodeid):
            # The item runs again (pytest-rerunfailures): evaluate the case afresh, with
            # its own deadline, rather than wait on a result already handed out.
            return self._on_engine(job)
        prefetcher = prefetcher or self._prefetch_from(job, upcoming)
        if prefetcher is not None:
            return prefetcher.result(job.nodeid, self.case_timeout)
        return self._on_engine(job)

    def warm_up(self) -> None:
        """Called when a suite file is collected: with an endpoint configured and the
        process transport chosen, the engine loop and the transport's helper process
        (a few hundred ms to start) start now, while collection goes on."""
        if self._warming or self.config.option.collectonly:
            return
        self._warming = True
        try:
            if self.ctx.offline:
                return
            client = self.ctx.llm
        except Exception:  # invalid LLM settings: the cases that need them report it
            return
        if client.transport_kind() == "process":
            self.engine.submit(client.prepare())

    # -- the four ways -------------------------------------------------------------------
    def _drive(self, job: CaseJob) -> CaseResult:
        from pytest_evals.worker.prefetch import drive

        result: CaseResult = drive(self._evaluation(job))
        return result

    def _evaluation(self, job: CaseJob) -> Coroutine[Any, Any, CaseResult]:
        # Bound on the first case: an import statement per case was a measurable part of
        # a cached case's own cost.
        evaluate = self._evaluate
        if evaluate is None:
            from pytest_evals.worker.prefetch import evaluate_case

            evaluate = self._evaluate = evaluate_case
        return evaluate(job.task, job.ref, self.ctx, job.index)

    def _inline_attempt(self, job: CaseJob) -> CaseResult | None:
        if not job.task.inline_cached:
            return None
        try_inline = self._attempt
        if try_inline is None:
            from pytest_evals.worker.inline_eval import attempt

            try_inline = self._attempt = attempt
        done, result = try_inline(self._evaluation(job))
        if done and result.status != "error":
            self.inline_cases += 1
            return result
        if done:  # errors are rare: re-run on the engine, which may be what it missed
            return self._on_engine(job)
        return None

    def _on_engine(self, job: CaseJob) -> CaseResult:
        return self.engine.run(self._evaluation(job), self.case_timeout)

    def _prefetch_from(self, first: CaseJob, upcoming: Sequence[object]) -> Prefetcher | None:
        """Start evaluating ``first`` and the cases this process will be sent after it."""
        jobs = [
            (job.nodeid, job.task, job.ref, job.index)
            for job in self._coming(first, upcoming)
            if job.nodeid not in self._prefetched and job.task.needs_engine()
        ]
        if not jobs:
            return None
        from pytest_evals.worker.prefetch import Prefetcher

        prefetcher = Prefetcher(self.ctx, self._window())
        prefetcher.start(jobs)
        self._prefetchers.append(prefetcher)
        for nodeid, *_rest in jobs:
            self._prefetched[nodeid] = prefetcher
        return self._prefetched.get(first.nodeid)

    def _coming(self, first: CaseJob, upcoming: Sequence[object]) -> list[CaseJob]:
        if self._positions is None:
            self._positions = [it for it in upcoming if is_case_nodeid(getattr(it, "nodeid", ""))]
        positions = self._positions
        here = next((i for i, it in enumerate(positions) if getattr(it, "nodeid", None) == first.nodeid), None)
        if here is None:
            return []
        workerinput = getattr(self.config, "workerinput", None)
        if workerinput is None:
            span = range(here, len(positions))
        elif workerinput.get(BLOCKS_FLAG):
            # The scheduler sends whole blocks (a dead worker's rest included): the
            # rest of this case's block comes here, whichever worker this is.
            span = block_rest(len(positions), here, int(workerinput["workercount"]))
        else:
            # xdist's own scheduling: what comes next is unknown; prefetching a guess
            # would evaluate cases another worker also runs.
            return []
        # Case items carry their job (a suite that failed to load has none); the runner
        # sits above collection but takes jobs, not items.
        jobs = (getattr(positions[i], "evals_job", None) for i in span)
        return [job for job in jobs if job is not None]

    def _window(self) -> int:
        window = int(self.config.getini("evals_prefetch_window") or 0)
        if window <= 0:
            concurrency = self.config.getoption("evals_concurrency", None) or 32
            window = max(4 * int(concurrency), 256)
        return window

    # -- end of the run --------------------------------------------------------------------
    def cancel(self) -> None:
        for prefetcher in self._prefetchers:
            prefetcher.cancel()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self.cancel()

    def close(self) -> None:
        self.cancel()
        self.engine.close()
        self._unwatch()
