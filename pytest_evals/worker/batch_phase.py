"""The batch phase of a run: rounds of gather -> submit -> wait -> fill, before scoring.

Runs in one process per run at a time (a file lock in the cache directory): in a plain
run that is the run itself; under xdist the first worker to take the lock gathers and
batches *every* case of the run (workers collect the same items), the others wait for
the lock, find the run's marker saying it is done, and all then score from the cache.
One batch at a time per run keeps the provider's queue and the bill predictable, and
``-n 2`` asks exactly what a plain run asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_evals.llm.batch import batch_gate as gate
from pytest_evals.llm.batch import ledger
from pytest_evals.llm.batch.batch_stats import BatchStats
from pytest_evals.llm.batch.lines import InputWriter, read_results
from pytest_evals.llm.batch.prices import batch_cost
from pytest_evals.llm.batch.service import FINAL, BatchService
from pytest_evals.llm.call_errors import LLMError
from pytest_evals.llm.client import display_url
from pytest_evals.llm.pricing import cost_of

if TYPE_CHECKING:
    from pytest_evals.llm.batch.batch_options import BatchSettings
    from pytest_evals.llm.client import LLMClient
    from pytest_evals.tasks.eval_context import EvalContext
    from pytest_evals.tasks.task_contract import CaseRef, Task

log = logging.getLogger("pytest_evals.llm")

#: (task, case ref, case index) of every case the batch phase evaluates.
CaseJob = tuple["Task[Any]", "CaseRef", int]
#: Cases evaluated at once while gathering (each stops at its first uncached request).
GATHER_WINDOW = 256
#: Status checks of one batch that may fail in a row before the phase stops.
RETRIEVE_ATTEMPTS = 10
#: Answers written to the cache per event-loop call (one SQLite transaction each).
STORE_CHUNK = 2000


class BatchPhase:
    def __init__(
        self,
        client: LLMClient,
        ctx: EvalContext,
        settings: BatchSettings,
        cases: Sequence[CaseJob],
        *,
        report: Callable[[str], None] = log.warning,
    ) -> None:
        self.client = client
        self.ctx = ctx
        self.settings = settings
        self.cases = cases
        self.report = report
        self.stats = BatchStats()
        self.cache_dir = Path(client.settings.cache_dir)
        self.folder = ledger.folder(self.cache_dir)
        self.run_id = client.settings.run_id
        self.base_url = display_url(client.settings.base_url)
        self.attempts: Counter[str] = Counter()
        self.failed: dict[str, str] = {}
        self.live: set[str] = set()
        self._service: BatchService | None = None

    @property
    def service(self) -> BatchService:
        if self._service is None:
            self._service = BatchService(self.client.settings)
        return self._service

    # -- the phase ------------------------------------------------------------------------
    def run(self) -> BatchStats:
        try:
            with ledger.gather_lock(self.cache_dir):
                marker = ledger.read_marker(self.cache_dir, self.run_id)
                if marker.get("done"):
                    # Another worker of this run batched everything already.
                    gate.mark_failed(marker.get("failed") or {})
                    gate.mark_live(set(marker.get("live") or []))
                    return self.stats
                self._rounds()
                if not self.client.settings.dry_run:
                    ledger.write_marker(
                        self.cache_dir,
                        self.run_id,
                        {"done": True, "failed": self.failed, "live": sorted(self.live), "stats": self.stats.to_json()},
                    )
        finally:
            if self._service is not None:
                self._service.close()
        return self.stats

    def _rounds(self) -> None:
        if not self.client.settings.dry_run:
            # Before anything is gathered or recorded: a server without the API says so
            # once (llm/batch/service.py), rather than once per case.
            self.service.check_available()
        self._resume()
        for round_no in range(1, self.settings.max_rounds + 1):
            started = time.monotonic()
            writer = self._gather(round_no)
            gathered = time.monotonic() - started
            if not len(writer):
                self._cleanup(writer)
                return
            if self.client.settings.dry_run:
                self._dry_run(writer)
                self._cleanup(writer)
                return
            self.stats.rounds += 1
            self.report(
                f"evals batch: round {round_no}: {len(writer)} uncached requests in {len(writer.chunks)} batch(es) "
                f"(gathered in {gathered:.1f}s)"
            )
            jobs = []
            try:
                for chunk in writer.chunks:
                    jobs.append(self._submit(round_no, chunk.path, chunk.keys, chunk.size))
            except LLMError as exc:
                self._give_up([c.keys for c in writer.chunks[len(jobs) :]], str(exc))
            self._wait_and_fill(jobs)
        self.report(
            f"evals batch: stopped after {self.settings.max_rounds} rounds (ini evals_batch_max_rounds); "
            "requests still missing are asked interactively"
        )

    # -- gathering ------------------------------------------------------------------------
    def _gather(self, round_no: int) -> InputWriter:
        writer = InputWriter(
            self.folder / "inputs",
            f"{self.run_id[:12]}-r{round_no}",
            max_lines=self.settings.max_lines,
            max_bytes=self.settings.max_bytes,
            estimate=self.client.settings.dry_run,
        )
        stats = self.client.stats
        # These evaluations are repeated by the scoring pass, which counts its own hits.
        hits, saved, shared = stats.cache_hits, stats.saved_usd, stats.shared
        try:
            self.ctx.engine.run(self._gather_all(writer))
        finally:
            writer.close()
            stats.cache_hits, stats.saved_usd, stats.shared = hits, saved, shared
        return writer

    async def _gather_all(self, writer: InputWriter) -> None:
        from pytest_evals.worker.prefetch import evaluate_case

        token = gate.gathering(writer)
        try:
            sem = asyncio.Semaphore(GATHER_WINDOW)
            running: set[asyncio.Task[None]] = set()

            async def one(task: Task[Any], ref: CaseRef, index: int) -> None:
                try:
                    await evaluate_case(task, ref, self.ctx, index)
                except gate.BatchPending:
                    pass  # recorded: the batch will answer it
                except BaseException as exc:
                    # A task group bundles BatchPending with its siblings' and the
                    # loop must not stop on one case: whatever it is, the scoring pass
                    # evaluates this case again and reports what happens.
                    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                        raise
                finally:
                    sem.release()

            for task, ref, index in self.cases:
                await sem.acquire()
                t = asyncio.ensure_future(one(task, ref, index))
                running.add(t)
                t.add_done_callback(running.discard)
            while running:
                await asyncio.wait(list(running))
            # Requests started side by side in one case (asyncio.gather of metrics) keep
            # recording after the first one ended the case: let them run to their end.
            stable, seen = 0, len(writer)
            for _ in range(200):
                await asyncio.sleep(0)
                stable = stable + 1 if len(writer) == seen else 0
                seen = len(writer)
                if stable >= 5:
                    break
        finally:
            gate.stop_gathering(token)

    def _dry_run(self, writer: InputWriter) -> None:
        s = self.stats
        for chunk in writer.chunks:
            for model, (lines, prompt, completion) in chunk.models.items():
                s.dry_run_requests += lines
                s.dry_run_prompt_tokens += prompt
                s.dry_run_completion_tokens += completion
                cost = batch_cost(model, prompt, completion, self.client.settings.prices, self.settings.prices)
                s.dry_run_cost_usd += cost or 0.0
        s.dry_run_batches = len(writer.chunks)

    def _cleanup(self, writer: InputWriter) -> None:
        for chunk in writer.chunks:
            chunk.path.unlink(missing_ok=True)

    # -- submitting -----------------------------------------------------------------------
    def _submit(self, round_no: int, path: Path, keys: dict[str, list[str]], size: int) -> ledger.Job:
        job = ledger.Job.new(self.base_url, self.run_id, round_no, path, keys, size)
        job.save(self.cache_dir)  # before anything is sent: see ledger.py
        job.input_file_id = self.service.upload(path)
        job.status = "submitting"
        job.save(self.cache_dir)
        batch = self.service.create(job.input_file_id, {"pytest_evals_job": job.id, "round": str(round_no)})
        job.batch_id = str(batch.id)
        job.status = "submitted"
        job.batch_status = str(batch.status)
        job.save(self.cache_dir)
        path.unlink(missing_ok=True)  # the provider has it now
        self.stats.batches += 1
        self.stats.lines += job.lines
        self.report(
            f"evals batch: submitted {job.batch_id} ({job.lines} requests, {job.bytes:,} bytes) "
            f"in {time.time() - job.created:.1f}s"
        )
        return job

    def _resume(self) -> None:
        """Re-attach to the batches a killed run left behind (same endpoint)."""
        waiting = []
        for job in ledger.load_jobs(self.cache_dir):
            if not job.pending or job.base_url != self.base_url:
                continue
            if job.status == "uploading":
                job.status, job.note = "abandoned", "killed before its input file was uploaded"
                job.save(self.cache_dir)
                continue
            if job.status == "submitting":
                assert job.input_file_id is not None
                found = self.service.find_by_input(job.input_file_id, job.id)
                if found is None:
                    job.status, job.note = "abandoned", "killed before the batch was created"
                    job.save(self.cache_dir)
                    continue
                job.batch_id, job.status = str(found.id), "submitted"
                job.save(self.cache_dir)
            self.stats.reattached += 1
            self.stats.batches += 1
            self.stats.lines += job.lines
            self.report(f"evals batch: re-attaching to {job.batch_id} of an earlier run ({job.lines} requests)")
            waiting.append(job)
        if waiting:
            self.stats.rounds += 1
            self._wait_and_fill(waiting)

    # -- waiting and filling --------------------------------------------------------------
    def _wait_and_fill(self, jobs: list[ledger.Job]) -> None:
        started = time.monotonic()
        pending = list(jobs)
        shown: dict[str, tuple[Any, ...]] = {}
        misses: Counter[str] = Counter()
        while pending:
            for job in list(pending):
                assert job.batch_id is not None
                try:
                    batch = self.service.retrieve(job.batch_id)
                except LLMError as exc:
                    misses[job.id] += 1
                    if misses[job.id] >= RETRIEVE_ATTEMPTS:
                        raise LLMError(
                            f"{exc} ({misses[job.id]} status checks in a row failed; the job "
                            f"record is {job.path(self.cache_dir)})",
                            cause=exc.cause,
                        ) from None
                    self.report(f"evals batch: {exc} (will retry)")
                    continue
                misses[job.id] = 0
                counts = batch.request_counts
                done, failed, total = (counts.completed, counts.failed, counts.total) if counts else (0, 0, job.lines)
                state = (batch.status, done, failed)
                if shown.get(job.id) != state:
                    shown[job.id] = state
                    self.report(self._progress(job, batch, done, failed, total, time.monotonic() - started))
                if batch.status in FINAL:
                    pending.remove(job)
                    self._fill(job, batch)
            if pending:
                time.sleep(self.settings.poll)
        self.stats.wait_seconds += time.monotonic() - started

    @staticmethod
    def _progress(job: ledger.Job, batch: Any, done: int, failed: int, total: int, elapsed: float) -> str:
        line = f"evals batch: {batch.id} {batch.status}: {done}/{total} completed, {failed} failed, {elapsed:.0f}s elapsed"
        expires = getattr(batch, "expires_at", None)
        if expires and batch.status not in FINAL:
            line += f", window ends in {max(0.0, expires - time.time()) / 3600:.1f}h"
        return line

    def _fill(self, job: ledger.Job, batch: Any) -> None:
        filling = time.time()
        answered: set[str] = set()
        if batch.output_file_id:
            out = self.folder / f"out-{job.id}.jsonl"
            self.service.download(batch.output_file_id, out)
            answered |= self._store_output(job, out)
            out.unlink(missing_ok=True)
        errors: dict[str, str] = {}
        if batch.error_file_id:
            err = self.folder / f"err-{job.id}.jsonl"
            self.service.download(batch.error_file_id, err)
            for result in read_results(err):
                if result.key in job.keys and result.key not in answered:
                    errors[result.key] = result.error or "batch line failed"
            err.unlink(missing_ok=True)
        missing = [k for k in job.keys if k not in answered and k not in errors]
        status = str(batch.status)
        if status != "completed":
            self.stats.incidents.append(
                f"{batch.id} {status}: {len(answered)} of {job.lines} requests completed"
                + (f" ({_batch_errors(batch)})" if _batch_errors(batch) else "")
            )
            self.report(f"evals batch: {self.stats.incidents[-1]}")
        if status in ("cancelled", "failed"):
            # Cancelled on purpose, or refused as a whole: sending it again would not help.
            reason = f"batch {batch.id} {status} before answering this request"
            if status == "failed" and _batch_errors(batch):
                reason += f": {_batch_errors(batch)}"
            self._give_up([dict.fromkeys(missing)], reason)
        else:
            errors.update({k: f"batch {batch.id} {status} before answering this request" for k in missing})
        self.stats.failed_lines += len(errors)
        for key, reason in errors.items():
            self._line_failed(key, reason)
        self.report(f"evals batch: filled the cache from {batch.id} in {time.time() - filling:.1f}s")
        job.status, job.batch_status = "filled", status
        job.completed, job.failed = len(answered), job.lines - len(answered)
        job.finished = time.time()
        job.save(self.cache_dir)

    def _store_output(self, job: ledger.Job, path: Path) -> set[str]:
        answered: set[str] = set()
        settings = self.client.settings
        pairs: list[tuple[str, str, dict[str, Any]]] = []
        for result in read_results(path):
            namespaces = job.keys.get(result.key)
            if namespaces is None:
                continue
            if result.completion is None:
                self.stats.failed_lines += 1
                self._line_failed(result.key, result.error or "batch line failed")
                continue
            c = result.completion
            answered.add(result.key)
            self.stats.completed += 1
            self.stats.prompt_tokens += c.prompt_tokens
            self.stats.completion_tokens += c.completion_tokens
            cost = batch_cost(c.model, c.prompt_tokens, c.completion_tokens, settings.prices, self.settings.prices)
            if cost is None:
                self.stats.unpriced += 1
            else:
                self.stats.cost_usd += cost
                self.stats.interactive_cost_usd += cost_of(c.model, c.prompt_tokens, c.completion_tokens, settings.prices) or 0.0
            value = {
                "text": c.text,
                "model": c.model,
                "prompt_tokens": c.prompt_tokens,
                "completion_tokens": c.completion_tokens,
                "finish_reason": c.finish_reason,
                "batch": job.batch_id,
            }
            if c.logprobs is not None:
                value["logprobs"] = c.logprobs
            pairs.extend((ns, result.key, value) for ns in namespaces)
            if len(pairs) >= STORE_CHUNK:
                self._store(pairs)
                pairs = []
        if pairs:
            self._store(pairs)
        return answered

    def _store(self, pairs: list[tuple[str, str, dict[str, Any]]]) -> None:
        cache = self.client.cache
        if cache is None:
            return

        async def store_all() -> None:
            await asyncio.gather(*(cache.store(ns, key, value) for ns, key, value in pairs))

        self.ctx.engine.run(store_all())

    def _line_failed(self, key: str, reason: str) -> None:
        self.attempts[key] += 1
        if self.settings.retry == "live":
            if key not in self.live:
                self.live.add(key)
                self.stats.retried_live += 1
                gate.mark_live({key})
        elif self.attempts[key] >= self.settings.attempts:
            tries = self.attempts[key]
            self._give_up([{key: []}], f"{reason} (tried in {tries} batch{'es' if tries > 1 else ''})")

    def _give_up(self, groups: Sequence[dict[str, Any]], reason: str) -> None:
        failures = {key: reason for keys in groups for key in keys}
        self.stats.given_up += len(failures)
        self.failed.update(failures)
        gate.mark_failed(failures)


def _batch_errors(batch: Any) -> str:
    errors = getattr(batch, "errors", None)
    data = getattr(errors, "data", None) or []
    return "; ".join(str(getattr(e, "message", e)) for e in data[:3])


def cases_of(items: Sequence[Any], everything: bool) -> list[CaseJob]:
    """The suite cases the batch phase covers: all, or those of suites with ``batch: true``."""
    from pytest_evals.collection.suite_items import CaseItem

    out = []
    for item in items:
        if not isinstance(item, CaseItem):
            continue
        with contextlib.suppress(Exception):
            if (everything or getattr(item.task.config, "batch", False)) and item.task.needs_engine():
                out.append((item.task, item.ref, item.index))
    return out
