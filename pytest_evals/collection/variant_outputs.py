"""What each variant actually produced for a case, kept on its result for the matrix.

A variant's pass/fail says whether it was right, not what it said: two models can
both be wrong with different answers, or one right for the wrong reason. Each
variant's task records, per case, the raw output of the system under test, in this
order of preference:

1. what the suite's target returned (``generate: true``: a model target's reply text,
   a callable's or a command's output), caught on the way out of ``ctx.target()``;
2. else the model reply the task itself kept in the case's details (a judge under
   test, as HaluEval's ``reply``);
3. else nothing: the matrix shows the task's label (``actual``/``predicted``).

The text is bounded (:data:`OUTPUT_CHARS`, with the full length said), secrets are
masked by the run's redaction, and it is stored as ``data["variant_output"]``: small,
it rides on the report to the xdist controller, and the JSON summary's
``case_results`` carry it for every case of every variant.

The recording is a subclass of the variant's own task class (made once per class),
so the worker, the cache and the prefetcher see the family's task unchanged.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from typing import TYPE_CHECKING, Any

from pytest_evals.hardening import redaction as redact

if TYPE_CHECKING:
    from pytest_evals.model.case_result import CaseResult
    from pytest_evals.tasks.eval_context import EvalContext
    from pytest_evals.tasks.task_contract import CaseRef, Task

#: The ``data`` key holding a variant's output for a case.
OUTPUT_KEY = "variant_output"
#: Characters of one output kept (a model's essay is cut; the matrix shows less still).
OUTPUT_CHARS = 1000
#: Keys of a result's details that hold the model's raw reply, by preference.
REPLY_KEYS = ("raw_reply", "reply", "judge_reply", "llm_answer", "completion", "response")

#: (case id, outputs) of the case being evaluated in this asyncio task.
_SINK: contextvars.ContextVar[tuple[str, list[Any]] | None] = contextvars.ContextVar(
    "pytest_evals_variant_outputs", default=None
)


def bounded(value: Any) -> str | None:
    """``value`` as text fit for a report: JSON for non-text, cut at OUTPUT_CHARS with
    the length said, secrets masked. None for no value."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > OUTPUT_CHARS:
        text = f"{text[:OUTPUT_CHARS]}… ({len(text):,} characters)"
    return redact.scrub(text)


class _RecordingTarget:
    """The suite's target, its outputs appended to this case's list."""

    def __init__(self, inner: Any, sink: list[Any]) -> None:
        self._inner = inner
        self._sink = sink

    async def run(self, *args: Any, **kwargs: Any) -> Any:
        output = await self._inner.run(*args, **kwargs)
        self._sink.append(output)
        return output

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _RecordingContext:
    """The evaluation context, with ``target()`` recording into this case's list."""

    def __init__(self, inner: EvalContext, sink: list[Any]) -> None:
        self._inner = inner
        self._sink = sink

    def target(self, suite: Any) -> Any:
        return _RecordingTarget(self._inner.target(suite), self._sink)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _sink_for(ref: CaseRef) -> list[Any]:
    current = _SINK.get()
    # Tagged with the case: inline evaluation runs on pytest's own thread and context,
    # where the previous case's list must not be taken for this one's.
    if current is not None and current[0] == ref.case_id:
        return current[1]
    sink: list[Any] = []
    _SINK.set((ref.case_id, sink))
    return sink


def _outputs_text(outputs: list[Any]) -> str | None:
    # A model target answers {"text": reply}: the reply is what the model said.
    plain = [o["text"] if isinstance(o, dict) and set(o) == {"text"} else o for o in outputs]
    return bounded(plain[0] if len(plain) == 1 else plain)


def output_of(result: CaseResult, outputs: list[Any]) -> str | None:
    """The case's output by the module's order of preference (None: none known)."""
    if outputs:
        return _outputs_text(outputs)
    details = result.details or {}
    for key in REPLY_KEYS:
        value = details.get(key)
        if isinstance(value, str):
            return bounded(value)
    return None


class OutputRecorder:
    """Mixin before a task class: records the case's output on its result."""

    async def generate(self, case: Any, ref: CaseRef, ctx: EvalContext) -> Any:
        sink = _sink_for(ref)
        try:
            return await super().generate(case, ref, _RecordingContext(ctx, sink))  # type: ignore[misc]
        except Exception as exc:
            # An output the task could not read (a reply naming no label) is what the
            # variant produced all the same: the case's details keep it as raw_reply.
            # Never in ``data``: an erroring result with data feeds the aggregates.
            if sink and getattr(exc, "raw_reply", None) is None:
                with contextlib.suppress(AttributeError):
                    exc.raw_reply = _outputs_text(sink)  # type: ignore[attr-defined]
            raise

    async def evaluate(self, case: Any, ref: CaseRef, ctx: EvalContext) -> CaseResult:
        sink = _sink_for(ref)
        try:
            result: CaseResult = await super().evaluate(case, ref, _RecordingContext(ctx, sink))  # type: ignore[misc]
        finally:
            _SINK.set(None)
        text = output_of(result, sink)
        if text is not None:
            result.data[OUTPUT_KEY] = text
        return result


_CLASSES: dict[type[Any], type[Any]] = {}


def recording_class(cls: type[Task[Any]]) -> type[Task[Any]]:
    """``cls`` with :class:`OutputRecorder` before it (one subclass per task class)."""
    made = _CLASSES.get(cls)
    if made is None:
        made = _CLASSES[cls] = type(cls.__name__, (OutputRecorder, cls),
                                    {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
    return made
