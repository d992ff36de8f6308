"""The LLM-judge version of every metric: one judge call per metric and run.

``factual_correctness`` and ``factual_recall`` read the same TP/FP/FN classification, so
when both are configured with the same model and temperature the case asks the judge
once per run and scores both from that reply.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from pytest_evals.families.rag.outcome import RunOutcome
from pytest_evals.families.rag.prompts import JUDGE_SYSTEM, PROMPTS, judge_messages
from pytest_evals.families.rag.replies import REPLIES
from pytest_evals.families.rag.scoring import outcome_from_reply
from pytest_evals.llm.judge import JSON_MAX_TOKENS
from pytest_evals.llm.truncation import TruncatePolicy, send_fitted
from pytest_evals.model.errors import JudgeError

if TYPE_CHECKING:
    from pytest_evals.families.rag.config import RagMetricSpec
    from pytest_evals.families.rag.inputs import MetricInputs
    from pytest_evals.families.rag.judge_block import ResolvedJudge
    from pytest_evals.llm.judge import Judge

#: Cache namespace of every rag_answers judge call.
NAMESPACE = "rag_answers"
#: The prompt fields ``truncate: longest`` may cut.
CUTTABLE = ("context",)


def coerce_reply(model: type[BaseModel], data: Any, metric: str, raw: str | None) -> BaseModel:
    """The judge layer may hand back the validated model or the parsed dict."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(reply)"
        raise JudgeError(f"{metric}: judge reply field {loc!r}: {first['msg']}", raw_reply=raw) from None


class CaseJudge:
    """Asks the judge for one case; identical requests within the case are made once."""

    def __init__(
        self,
        judge: Judge,
        inputs: MetricInputs,
        penalize_ambiguous: bool = True,
        judges: Mapping[str, ResolvedJudge] | None = None,
        truncate: TruncatePolicy = "none",
        context_tokens: int | None = None,
    ) -> None:
        self.truncate: TruncatePolicy = truncate
        self.context_tokens = context_tokens
        #: metric -> what the truncate policy did to its prompt (recorded per case).
        self.truncations: dict[str, dict[str, Any]] = {}
        self.judge = judge
        self.inputs = inputs
        self.penalize_ambiguous = penalize_ambiguous
        #: metric -> its resolved judge settings (persona, criteria, model...); a metric
        #: without one is asked with its spec's model and GOV.UK's persona.
        self.judges = dict(judges or {})
        self._pending: dict[tuple[Any, ...], asyncio.Task[tuple[BaseModel, Any]]] = {}

    def _settings(self, metric: str, spec: RagMetricSpec) -> tuple[str, str | None, float | None]:
        resolved = self.judges.get(metric)
        if resolved is None:
            return JUDGE_SYSTEM, spec.model, spec.temperature
        return resolved.system_message(), resolved.model, resolved.temperature

    async def _ask(self, metric: str, spec: RagMetricSpec, repeat: int) -> tuple[BaseModel, Any]:
        model = REPLIES[metric]
        system, judge_model, temperature = self._settings(metric, spec)
        fields = self.inputs.prompt_fields(metric)

        def render(cut: dict[str, str]) -> list[dict[str, Any]]:
            return judge_messages(metric, system, **{**fields, **cut})

        async def send(messages: list[dict[str, Any]]) -> tuple[Any, Any]:
            return await self.judge.json(
                messages,
                schema=model,
                namespace=NAMESPACE,
                model=judge_model,
                temperature=temperature,
                repeat=repeat,
            )

        llm = self.judge.llm
        # Only the retrieved context may be cut: the answer, the question and the ideal
        # answer are what is judged.
        cuttable = {k: v for k, v in fields.items() if k in CUTTABLE and v}
        (data, resp), record = await send_fitted(
            llm,
            send,
            fields=cuttable,
            render=render,
            policy=self.truncate,
            context_tokens=self.context_tokens,
            reply_room=llm.settings.max_tokens or JSON_MAX_TOKENS,
            model=judge_model,
            what=f"{metric} judge prompt",
        )
        if record is not None:
            self.truncations[metric] = record.to_json()
        return coerce_reply(model, data, metric, getattr(resp, "text", None)), resp

    async def run(self, metric: str, spec: RagMetricSpec, repeat: int) -> RunOutcome:
        # Metrics asking the same thing in the same words of the same model share a reply.
        key = (PROMPTS[metric], *self._settings(metric, spec), repeat)
        task = self._pending.get(key)
        if task is None:
            task = asyncio.ensure_future(self._ask(metric, spec, repeat))
            self._pending[key] = task
        reply, resp = await task
        try:
            outcome = outcome_from_reply(metric, reply, self.penalize_ambiguous)
        except JudgeError as exc:
            # 0/0: keep what the judge said so the reviewer can see why there was nothing to count.
            raise JudgeError(str(exc), raw_reply=getattr(resp, "text", None)) from None
        outcome.cached = bool(getattr(resp, "cached", False))
        outcome.model = getattr(resp, "model", None)
        return outcome
