"""``task: assertions``: each case's answer checked by typed, weighted assertions.

The suite's ``assert:`` entries and custom ``metrics:`` are checked once, when the suite
is collected: a malformed one makes the suite one ERROR naming the file, the line and
the field. Each case then runs the suite's assertions and its own; it passes when every
assertion (of non-zero weight) passes (``pass_rule: all``), or when its weighted score
reaches the suite's ``threshold`` (``pass_rule: weighted``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pytest_evals.families.assertions import assertion_metrics
from pytest_evals.families.assertions.assertion_cases import (
    OUTPUT_FIELDS,
    AssertionCase,
    as_text,
    read_case,
)
from pytest_evals.families.assertions.assertion_outcome import Outcome
from pytest_evals.families.assertions.assertion_spec import (
    Assertion,
    SpecError,
    parse_list,
    parse_metric,
    run_assertion,
)
from pytest_evals.families.assertions.config import AssertionsConfig
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import (
    CaseInputError,
    EvalsError,
    SkipCase,
    SuiteConfigError,
    TargetError,
    error_kind,
)
from pytest_evals.model.metric_value import MetricTree
from pytest_evals.tasks.task_contract import CaseRef, Task

if TYPE_CHECKING:
    from pytest_evals.tasks.eval_context import EvalContext

#: Reference types whose libraries (and models) this process has loaded.
_WARMED: set[str] = set()
_LOCKS: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}


def _warm_lock() -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    if loop not in _LOCKS:
        _LOCKS[loop] = asyncio.Lock()
    return _LOCKS[loop]


#: Fields a target's JSON reply may hold the answer in.
TARGET_OUTPUT_FIELDS = ("output", "text", "answer", "response")


class AssertionsTask(Task[AssertionCase]):
    name = "assertions"
    config_model = AssertionsConfig
    # The answer (saved, or made by the target) and its usage are the system's outputs.
    output_fields = frozenset({*OUTPUT_FIELDS, "usage"})

    @property
    def assertions_config(self) -> AssertionsConfig:
        assert isinstance(self.config, AssertionsConfig)
        return self.config

    # -- the suite's own assertions ----------------------------------------------------
    @cached_property
    def suite_assertions(self) -> list[Assertion]:
        """The suite's ``assert:`` then its ``metrics:``; SuiteConfigError naming the
        line and field of the first malformed entry."""
        from pytest_evals.families.assertions.yaml_lines import line_of

        cfg = self.assertions_config
        taken: set[str] = set()
        try:
            found = parse_list(cfg.assert_, "assert", taken)
            found += parse_list(cfg.metrics, "metrics", taken, parse_metric)
        except SpecError as exc:
            steps: list[str | int] = []
            for part in exc.field.replace("]", "").replace("[", ".").split("."):
                if part:
                    steps.append(int(part) if part.isdigit() else part)
            line = line_of(self.suite.path, steps)
            where = f"{self.suite.path}:{line}" if line else str(self.suite.path)
            raise SuiteConfigError(f"{where}: field {exc.field!r}: {exc}") from None
        return found

    def case_refs(self) -> Iterator[CaseRef]:
        self.suite_assertions  # noqa: B018 - a malformed assertion is the suite's error, before any case
        yield from super().case_refs()

    def input_fingerprint(self, record: Any) -> str | None:
        from pytest_evals.tasks.input_fingerprint import fingerprint, input_part

        own = self.assertions_config.output_field
        outputs = self.output_fields | ({own} if own else set())
        return fingerprint(input_part(record, None, frozenset(outputs)))

    def validate_case(self, data: Any, ref: CaseRef) -> AssertionCase:
        names = {a.name for a in self.suite_assertions}
        case = read_case(data, ref.source, self.assertions_config, names, bool(self.config.generate))
        if not self.suite_assertions and not case.asserts:
            raise CaseInputError(
                f"{ref.source}: field 'assert': the case has no assertions and the suite gives none "
                "(add an assert: list to the suite or to the case)"
            )
        return case

    def needs_engine(self) -> bool:
        # Judges, the embedding model and the metrics' worker threads all wait.
        return True

    # -- generate: true ----------------------------------------------------------------
    async def generate(self, case: AssertionCase, ref: CaseRef, ctx: EvalContext) -> AssertionCase:
        from pytest_evals.model.case_usage import current_usage

        target = ctx.target(self.suite)
        usage = current_usage.get()
        before = dict(usage.__dict__) if usage is not None else {}
        started = time.perf_counter()
        reply = await target.run(dict(case.record))
        latency_ms = (time.perf_counter() - started) * 1000.0
        output = reply
        if isinstance(reply, dict):
            key = next((k for k in TARGET_OUTPUT_FIELDS if k in reply), None)
            if key is None:
                raise TargetError(
                    f"{ref.source}: target {target.description}: expected text or a JSON object with "
                    f"{' or '.join(repr(k) for k in TARGET_OUTPUT_FIELDS)}, got keys {sorted(reply)[:8]}"
                )
            output = reply[key]
        if output is None:
            raise TargetError(f"{ref.source}: target {target.description} returned no output")
        record: dict[str, Any] = {"latency_ms": round(latency_ms, 3)}
        if usage is not None:
            after = usage.__dict__
            for key in ("cost", "prompt_tokens", "completion_tokens", "requests"):
                record[key] = after.get(key, 0) - before.get(key, 0)
        case.output = as_text(output)
        case.usage = record
        return case

    def generated_record(self, case: AssertionCase, ref: CaseRef) -> Any:
        out_field = self.assertions_config.output_field or "output"
        return {**case.record, out_field: case.output, "usage": case.usage}

    # -- evaluation --------------------------------------------------------------------
    async def _warm_up(self, items: list[Assertion], ctx: EvalContext) -> None:
        """Load the libraries and the embedding model one at a time, before cases run
        them concurrently: two threads importing torch at once break the import."""
        from pytest_evals.families.assertions.reference_checks import MetricCheck

        wanted = [a for a in items if a.kind == "reference" and a.type not in _WARMED]
        if not wanted:
            return
        async with _warm_lock():
            for a in wanted:
                if a.type in _WARMED:
                    continue
                if a.type in ("similar", "semantic_similarity"):
                    await ctx.embedder.aencode(["warm-up"])
                if isinstance(a.runner, MetricCheck):
                    await asyncio.to_thread(a.runner.warm_up, ctx)
                _WARMED.add(a.type)

    async def evaluate(self, case: AssertionCase, ref: CaseRef, ctx: EvalContext) -> CaseResult:
        items = [*self.suite_assertions, *case.asserts]
        cfg = self.assertions_config
        # Judged assertions fit their prompts by the suite's truncate policy.
        view = dataclasses.replace(case.view(), truncate=cfg.truncate, context_tokens=cfg.context_tokens)
        await self._warm_up(items, ctx)
        outcomes: dict[str, Outcome] = {}
        waiting = [a for a in items if a.is_async]
        for a in items:
            if not a.is_async:
                outcomes[a.name] = await run_assertion(a, view, ctx)
        done = await asyncio.gather(*(run_assertion(a, view, ctx) for a in waiting), return_exceptions=True)
        failure: BaseException | None = None
        for a, got in zip(waiting, done, strict=True):
            if isinstance(got, BaseException):
                if isinstance(got, SkipCase):
                    raise got  # truncate: skip: the case is recorded as skipped, not scored
                if not isinstance(got, EvalsError):
                    # A bug, or a library that is not installed: the runner's handler
                    # keeps the traceback or names the extra to install.
                    raise got
                failure = failure or got
            else:
                outcomes[a.name] = got
        result = self.new_result(ref)
        result.details = {
            "output": case.output,
            "input": case.input,
            "references": case.references,
            "assertions": [self._detail(a, outcomes.get(a.name)) for a in items],
            "pass_rule": self.assertions_config.effective_pass_rule,
        }
        if case.usage is not None:
            result.details["usage"] = case.usage
        if failure is not None:
            # One assertion could not be scored: the case has no honest verdict. What
            # the others found stays in the details.
            result.status = "error"
            result.error_kind = error_kind(failure)
            result.message = str(failure) if str(failure).startswith(ref.source) else f"{ref.source}: {failure}"
            raw = getattr(failure, "raw_reply", None)
            if raw is not None:
                result.details["raw_reply"] = raw
            return result
        self._verdict(result, items, outcomes)
        return result

    @staticmethod
    def _detail(a: Assertion, o: Outcome | None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": a.name, "type": a.type, "weight": a.weight}
        if o is None:
            out["status"] = "not scored"
            return out
        out.update(passed=o.passed, score=o.score, value=o.value, reason=o.reason)
        if o.evidence:
            out["evidence"] = o.evidence
        return out

    def _verdict(self, result: CaseResult, items: list[Assertion], outcomes: Mapping[str, Outcome]) -> None:
        cfg = self.assertions_config
        total = sum(a.weight for a in items)
        if total > 0:
            score = sum(a.weight * outcomes[a.name].score for a in items) / total
        else:
            score = sum(outcomes[a.name].score for a in items) / len(items)
        counted = [a for a in items if a.weight > 0] or items
        failing = [a for a in counted if not outcomes[a.name].passed]
        rule = cfg.effective_pass_rule
        threshold = 1.0 if cfg.threshold is None else cfg.threshold
        passed = not failing if rule == "all" else score >= threshold - 1e-12
        data: dict[str, Any] = {}
        for a in items:
            o = outcomes[a.name]
            entry: dict[str, Any] = {"type": a.type, "passed": o.passed, "score": round(o.score, 12)}
            if o.value is not None:
                entry["value"] = o.value
            if a.bounds is not None:
                entry["bounds"] = list(a.bounds)
            if a.custom:
                entry["custom"] = True
                result.scores[a.name] = o.value if o.value is not None else o.score
            if "mode" in o.evidence:
                entry["mode"] = o.evidence["mode"]
            data[a.name] = entry
        result.data = {"score": score, "assertions": data}
        result.scores["score"] = score
        result.status = "passed" if passed else "failed"
        if not passed:
            why = "; ".join(f"{a.name}: {outcomes[a.name].reason}" for a in failing) or "no assertion failed"
            if rule == "weighted":
                result.message = f"weighted score {score:.3g} < {threshold:g} ({why})"
            else:
                result.message = f"{len(failing)} of {len(counted)} assertions failed: {why}"

    # -- aggregation -------------------------------------------------------------------
    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        return assertion_metrics.aggregate(results), {}

    def paired_contribution(
        self, data: Mapping[str, Any], scores: Mapping[str, Any], status: str, metric: str
    ) -> Any:
        return assertion_metrics.paired_contribution(data, scores, status, metric)

    def suite_warnings(self, results: list[CaseResult], metrics: MetricTree) -> list[str]:
        plain: dict[str, int] = {}
        for r in results:
            for name, entry in assertion_metrics.case_assertions(r.data).items():
                if entry.get("mode") == "plain":
                    plain[name] = plain.get(name, 0) + 1
        return [
            f"g_eval {name!r}: {n} case{'s' if n > 1 else ''} scored plain (no log-probabilities came "
            "back, so the score is the judge's number, not the probability-weighted one)"
            for name, n in plain.items()
        ]

    def run_settings(self) -> dict[str, Any]:
        out = super().run_settings()
        out.pop("metrics", None)
        judges = {}
        try:
            suite_level = self.suite_assertions
        except SuiteConfigError:
            return out  # the suite's error is reported as such
        for a in suite_level:
            if a.kind == "judged":
                block = a.runner.judge
                judges[a.name] = {k: v for k, v in (("model", block.model), ("temperature", block.temperature),
                                                    ("n_runs", block.n_runs)) if v is not None}
        if judges:
            out["judges"] = judges
        return out
