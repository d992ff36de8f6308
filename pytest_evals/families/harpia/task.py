"""``task: harpia``: a HarpIA Lab input file run as a suite, one item per instance.

Files named ``*.harpia.json`` are collected as they are; a ``*.eval.yaml`` with
``task: harpia`` and ``input_path`` adds suite-level settings (thresholds, generate,
target). The metrics listed in the file are checked at collection (unknown ids or
parameters make the whole suite an error that lists what is accepted); each instance is
validated when it runs. Cheap metrics are computed inline; model-backed ones go through a
batcher shared by the suite's instances, so BERTScore runs once over many instances; the
LLM judge sends one request per instance through the session's client.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from pytest_evals.families.harpia.batcher import Batcher
from pytest_evals.families.harpia.deadline import (
    DEFAULT_DEADLINE,
    DeadlineExceeded,
    acall_with_deadline,
    call_with_deadline,
)
from pytest_evals.families.harpia.document import (
    HarpiaDocument,
    Instance,
    MetricSpec,
    check_environment,
    instance_id_of,
    load_document,
    normalise_keys,
    validate_instance,
)
from pytest_evals.families.harpia.scores import (
    DATA_ERRORS,
    DATA_HYPOTHESIS,
    DATA_INSTANCE_ID,
    DATA_METRICS,
    DATA_REFERENCES,
    DATA_SUITE_NAME,
    TABLE_KEY,
    compute_outcomes,
    metric_tree,
)
from pytest_evals.metrics.reference import MetricError, Pair, Scored
from pytest_evals.metrics.reference.semantic import SemanticSimilarity
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import EvalsError, SuiteConfigError, TargetError, error_kind
from pytest_evals.model.metric_value import MetricTree
from pytest_evals.registry.missing_extras import describe
from pytest_evals.suites.suite_config import SuiteConfig
from pytest_evals.tasks.task_contract import CaseRef, Task

if TYPE_CHECKING:
    from pytest_evals.tasks.eval_context import EvalContext

#: Fields a target's reply may carry the output in (a bare string works too).
OUTPUT_FIELDS: tuple[str, ...] = ("actual-output", "actual_output", "output", "text")


@dataclass(frozen=True)
class Timed:
    """A metric's result for one instance, its compute and set-up time (seconds)."""

    scored: Scored
    elapsed: float
    setup: float = 0.0
    #: Instances scored in the same model call (model-backed metrics).
    batch_size: int | None = None


class HarpiaConfig(SuiteConfig):
    #: Seconds an instance's Python-computed metrics may take (None: ini
    #: ``evals_harpia_case_deadline``; 0: no limit).
    case_deadline: float | None = Field(default=None, ge=0)

    @field_validator("metrics")
    @classmethod
    def _metrics_live_in_the_file(cls, value: list[Any]) -> list[Any]:
        if value:
            raise ValueError("a harpia suite takes its metrics from the HarpIA input file ('metrics' there)")
        return value


def _references_of(raw: Any) -> list[str]:
    if not isinstance(raw, dict):
        return []
    refs = normalise_keys(raw).get("expected_output")
    if isinstance(refs, str):
        return [refs]
    return [r for r in refs if isinstance(r, str)] if isinstance(refs, list) else []


def _target_text(output: Any, where: str) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        for key in OUTPUT_FIELDS:
            if isinstance(output.get(key), str):
                return str(output[key])
        raise TargetError(f"{where}: target reply has no text field ({', '.join(OUTPUT_FIELDS)}); got keys {sorted(output)}")
    raise TargetError(f"{where}: target reply must be a string or an object, got {type(output).__name__}")


class Harpia(Task[Instance]):
    name = "harpia"
    config_model = HarpiaConfig

    def __init__(self, suite: Any) -> None:
        super().__init__(suite)
        self._batchers: dict[str, Batcher[Pair, Scored]] = {}
        self._warm: set[str] = set()
        #: Inline metric computations run one at a time per event loop (they hold the GIL).
        self._slots: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}

    # -- the input file ----------------------------------------------------------------
    @cached_property
    def document(self) -> HarpiaDocument:
        from pytest_evals.suites.jsonl_cases import display_path

        if not self.config.input_path:
            raise SuiteConfigError(f"{self.suite.path}: field 'input_path' is required for task 'harpia'")
        path = self.suite.resolve(self.config.input_path)
        doc = load_document(path, display_path(path))
        references = [_references_of(raw) for raw in doc.instances]
        for spec in doc.specs:
            spec.metric.prepare(references)
        return doc

    @property
    def specs(self) -> list[MetricSpec]:
        return self.document.specs

    def case_refs(self) -> Iterator[CaseRef]:
        from pytest_evals.suites.jsonl_cases import id_text, safe_id

        doc = self.document
        check_environment(doc)
        seen: dict[str, int] = {}
        #: Duplicates are judged on the id as written: two ids made safe alike are not one.
        first: dict[str, int] = {}
        for i, raw in enumerate(doc.instances):
            ident = instance_id_of(raw)
            error = None
            if ident is None:
                case_id = f"instance-{i + 1}"
                what = "is not an object" if not isinstance(raw, dict) else "has no usable 'id' (a non-empty string or integer)"
                error = f"{doc.shown}: instances[{i}] {what}"
                source = f"{doc.shown}#instances[{i}]"
            else:
                case_id = safe_id(ident)
                source = doc.source(ident)
                key = id_text(ident)
                if key in first:
                    error = (f"{source}: duplicate instance id {ident!r} (instances[{first[key]}] and "
                             f"instances[{i}]); ids must be unique within a file")
                else:
                    first[key] = i
            # Node ids stay unique even when ids repeat or collide with a made-up name.
            while case_id in seen:
                case_id = f"{case_id}@{i + 1}"
            seen[case_id] = i
            yield CaseRef(case_id=case_id, source=source, locator=i, error=error)

    def read_case(self, ref: CaseRef) -> Any:
        return self.document.instances[ref.locator]

    def input_fingerprint(self, record: Any) -> str | None:
        # The instance's input and references, whichever way its keys are spelt
        # (``expected-output`` or ``expected_output``); the actual output is not input.
        from pytest_evals.families.harpia.document import normalise_keys
        from pytest_evals.tasks.input_fingerprint import fingerprint, input_part

        if isinstance(record, dict):
            record = normalise_keys(record)
        return fingerprint(input_part(record, ("id", "input", "expected_output"), ()))

    def validate_case(self, data: Any, ref: CaseRef) -> Instance:
        supervised = [s.name for s in self.specs if s.metric.supervised]
        return validate_instance(data, ref.source, need_output=not self.config.generate, need_references=supervised)

    def needs_engine(self) -> bool:
        if self.config.generate:
            return True
        return any(s.metric.batched or s.metric.uses_judge for s in self.specs)

    # -- evaluation --------------------------------------------------------------------
    async def generate(self, case: Instance, ref: CaseRef, ctx: EvalContext) -> Instance:
        if case.actual_output is not None:
            return case
        target = ctx.target(self.suite)
        # "question" repeats the input for targets written for the other tasks.
        payload = {"id": case.id, "input": case.input, "question": case.input, "expected_output": case.expected_output}
        output = await target.run(payload)
        text = _target_text(output, f"{ref.source}: target {target.description}")
        return case.model_copy(update={"actual_output": text})

    def _batcher(self, spec: MetricSpec, ctx: EvalContext) -> Batcher[Pair, Scored]:
        batcher = self._batchers.get(spec.name)
        if batcher is None:
            metric = spec.metric
            if isinstance(metric, SemanticSimilarity) and metric.encoder is None:
                # Share the session's embedded model; without one the metric loads it itself.
                with contextlib.suppress(ImportError, AttributeError):
                    metric.encoder = ctx.embedder.encode
            batcher = Batcher(metric.score_pairs, prepare=metric.warm_up)
            self._batchers[spec.name] = batcher
        return batcher

    async def _score_async(self, spec: MetricSpec, pair: Pair, ctx: EvalContext) -> Timed:
        if spec.metric.uses_judge:
            started = time.perf_counter()
            # The judge's cache namespace is the task's: the same requests as before.
            result = await spec.metric.judge(pair, ctx, namespace=self.name)  # type: ignore[attr-defined]
            return Timed(Scored(result), time.perf_counter() - started)
        done = await self._batcher(spec, ctx).submit(pair)
        return Timed(done.output, done.elapsed, done.setup, done.batch_size)

    def _warm_up(self, spec: MetricSpec) -> float:
        """Import the library and load its data once (set-up time, outside the deadline)."""
        if spec.name in self._warm:
            return 0.0
        started = time.perf_counter()
        spec.metric.warm_up()
        self._warm.add(spec.name)
        return time.perf_counter() - started

    @staticmethod
    def _score_inline(specs: list[MetricSpec], pair: Pair, setup: dict[str, float], into: dict[str, Timed | Exception]) -> None:
        for spec in specs:
            started = time.perf_counter()
            try:
                [scored] = spec.metric.score_pairs([pair])
                into[spec.name] = Timed(scored, time.perf_counter() - started, setup.get(spec.name, 0.0))
            except Exception as exc:  # one metric's failure must not hide the others' results
                into[spec.name] = exc

    def deadline(self, ctx: EvalContext) -> float:
        own = getattr(self.config, "case_deadline", None)
        if own is not None:
            return float(own)
        try:
            from pytest_evals.families.harpia.option_aliases import getini
            from pytest_evals.families.harpia.plugin import CASE_DEADLINE

            raw = getini(ctx.config, CASE_DEADLINE)
        except (ValueError, AttributeError):
            raw = None
        return float(raw) if raw not in (None, "") else DEFAULT_DEADLINE

    async def _inline(self, specs: list[MetricSpec], pair: Pair, ctx: EvalContext) -> dict[str, Timed | Exception]:
        """The Python-computed metrics of one instance, within the per-instance deadline."""
        setup: dict[str, float] = {}
        for spec in specs:
            try:
                setup[spec.name] = self._warm_up(spec)
            except Exception:
                setup[spec.name] = 0.0  # the metric's own call reports the problem
        done: dict[str, Timed | Exception] = {}
        seconds = self.deadline(ctx)
        what = "metrics " + ", ".join(spec.name for spec in specs)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        try:
            if loop is None:  # driven without an event loop: nothing else to keep running
                call_with_deadline(lambda: self._score_inline(specs, pair, setup, done), seconds, what)
            else:
                slot = self._slots.setdefault(loop, asyncio.Semaphore(1))
                async with slot:
                    await acall_with_deadline(lambda: self._score_inline(specs, pair, setup, done), seconds, what)
        except DeadlineExceeded:
            finished = dict(done)  # the worker may still be adding to ``done``
            running = next((spec.name for spec in specs if spec.name not in finished), "")
            for spec in specs:
                if spec.name == running:
                    finished[spec.name] = DeadlineExceeded(
                        f"did not finish within the per-instance deadline of {seconds:g} s "
                        "(ini evals_harpia_case_deadline or the suite's case_deadline; 0 disables it)"
                    )
                elif spec.name not in finished:
                    finished[spec.name] = DeadlineExceeded(
                        f"not computed: the per-instance deadline of {seconds:g} s passed while {running!r} ran"
                    )
            return finished
        return done

    async def evaluate(self, case: Instance, ref: CaseRef, ctx: EvalContext) -> CaseResult:
        pair = Pair(case.actual_output or "", tuple(case.expected_output), case.input)
        outcomes: dict[str, Timed | Exception] = {}
        deferred = []
        inline = []
        for spec in self.specs:
            if not spec.metric.sentence_level:
                continue
            if spec.metric.batched or spec.metric.uses_judge:
                deferred.append(spec)
            else:
                inline.append(spec)
        if inline:
            outcomes.update(await self._inline(inline, pair, ctx))
        if deferred:
            # Only reached with the engine (needs_engine() is true for these metrics).
            done = await asyncio.gather(*(self._score_async(s, pair, ctx) for s in deferred), return_exceptions=True)
            for spec, outcome in zip(deferred, done, strict=True):
                if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                    raise outcome  # cancelled: the session is ending
                outcomes[spec.name] = outcome
        return self._result(case, ref, pair, outcomes)

    def _result(self, case: Instance, ref: CaseRef, pair: Pair, outcomes: dict[str, Timed | Exception]) -> CaseResult:
        result = self.new_result(ref)
        metrics: dict[str, Any] = {}
        errors: dict[str, str] = {}
        batches: dict[str, int] = {}
        misses = []
        first_error: Exception | None = None
        for spec in self.specs:
            timed = outcomes.get(spec.name)
            if timed is None:
                continue
            if isinstance(timed, Exception):
                first_error = first_error or timed
                text = str(timed) or type(timed).__name__
                known = isinstance(timed, (EvalsError, MetricError))
                errors[spec.name] = text if known else describe(timed)
                continue
            scored, metric = timed.scored, spec.metric
            if scored.error is not None:
                # Its batch was scored; this instance alone could not be.
                failure = MetricError(scored.error)
                first_error = first_error or failure
                errors[spec.name] = scored.error
                continue
            passed = metric.passes(scored.result)
            metrics[spec.name] = {
                # For the log line written as soon as the controller has this case.
                "metric_id": spec.id,
                "parameters": spec.parameters,
                "result": scored.result,
                "reference_index": scored.reference_index,
                "elapsed": timed.elapsed,
                "setup": timed.setup,
                "passed": passed,
            }
            if timed.batch_size is not None:
                batches[spec.name] = timed.batch_size
            if len(metric.keys) == 1:
                result.scores[spec.name] = scored.result.get(metric.keys[0])
            else:
                for key in metric.keys:
                    result.scores[f"{spec.name}.{key}"] = scored.result.get(key)
            if passed is False:
                value = scored.result.get(metric.primary)
                shown = "undefined" if value is None else f"{value:.4g}"
                relation = "below minimum" if metric.higher_is_better else "above maximum"
                misses.append(f"{spec.name} {metric.primary} = {shown}, {relation} {metric.params.threshold:g}")
        data: dict[str, Any] = {DATA_INSTANCE_ID: case.id, DATA_METRICS: metrics, DATA_SUITE_NAME: self.suite.name}
        if any(s.metric.corpus_level for s in self.specs):
            data[DATA_HYPOTHESIS] = pair.hypothesis
            data[DATA_REFERENCES] = list(pair.references)
        if errors:
            data[DATA_ERRORS] = errors
        result.data = data
        result.details = {
            "input": case.input,
            "actual-output": case.actual_output,
            "expected-output": case.expected_output,
        }
        if batches:
            # How many instances shared each model call (a reviewer's check on batching).
            result.details["batch_sizes"] = batches
        if first_error is not None:
            # The instance is an error, but the metrics that did score it still count.
            result.status = "error"
            result.error_kind = error_kind(first_error)
            result.message = f"{ref.source}: " + "; ".join(f"metric {n!r}: {m}" for n, m in errors.items())
            raw = getattr(first_error, "raw_reply", None)
            if raw is not None:
                result.details["raw_reply"] = raw
            if misses:
                result.message += "; also " + "; ".join(misses)
        elif misses:
            result.status = "failed"
            result.message = "; ".join(misses)
        return result

    # -- aggregation (controller) --------------------------------------------------------
    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        doc = self.document
        outcomes = compute_outcomes(doc.specs, results)
        tree = metric_tree(outcomes, sorted(results, key=lambda r: (r.index, r.case_id)))
        table = {
            "input": doc.shown,
            "metrics": [o.to_output() for o in outcomes],
            "disabled": [e.name or e.id for e in doc.disabled],
        }
        return tree, {TABLE_KEY: table}

