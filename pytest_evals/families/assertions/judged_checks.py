"""Assertions a judge model scores: ``llm_rubric``, ``g_eval``, ``factuality``,
``answer_relevance``.

They ask through the session's judge (``ctx.judge``): the cached, concurrency-limited
client every task uses, so a rerun is answered from the cache, many cases' requests
overlap, and batch mode records them like any judge's. ``n_runs`` asks that many
independent times (distinct cache entries) and scores the mean. With no endpoint
configured a judged assertion cannot be scored: the case is an ERROR saying so.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pytest_evals.families.assertions import prompts
from pytest_evals.families.assertions.assertion_outcome import CaseView, Outcome, clamp01
from pytest_evals.families.assertions.config import JudgeBlock
from pytest_evals.families.assertions.deterministic_checks import AssertionProblem, CommonParams
from pytest_evals.model.errors import CaseInputError, InfrastructureError, JudgeError

if TYPE_CHECKING:
    from collections.abc import Callable

    from pytest_evals.llm.client import ChatResponse
    from pytest_evals.tasks.eval_context import EvalContext

    #: Turns the prompt's fields (input, reference: the texts a truncate policy may
    #: cut) into the judge's messages.
    Render = Callable[[dict[str, str | None]], list[dict[str, str]]]

#: Cache namespace of every judged assertion's requests.
NAMESPACE = "assertions"
#: Top log-probabilities asked for with a g_eval request (the API's maximum is 20).
TOP_LOGPROBS = 20
FACT_VERDICTS = ("consistent", "subset", "superset", "disagrees")
DEFAULT_FACT_SCORES = {"consistent": 1.0, "superset": 0.8, "subset": 0.6, "disagrees": 0.0}


class NeedsEndpoint(InfrastructureError):
    """A judged assertion in a run with no model endpoint."""


# -- parameters ------------------------------------------------------------------------
class JudgedParams(CommonParams):
    judge: JudgeBlock = Field(default_factory=JudgeBlock)
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)


class RubricParams(JudgedParams):
    #: The rubric: what a good output does (``value`` is the same, promptfoo's spelling).
    criteria: str | None = Field(default=None, min_length=1)
    value: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_criteria(self) -> RubricParams:
        if self.criteria is None and self.value is None:
            raise ValueError("criteria: give the rubric's criteria (criteria: or value:)")
        return self

    @property
    def text(self) -> str:
        return self.criteria or self.value or ""


class GEvalParams(JudgedParams):
    criteria: str = Field(min_length=1)
    steps: list[str] | None = Field(default=None, min_length=1)
    scale: list[int] = Field(default_factory=lambda: [1, 5], min_length=2, max_length=2)
    #: In the scale's units (default: its middle).
    threshold: float | None = None
    #: Ask for the top log-probabilities (false for an endpoint that refuses them).
    logprobs: bool = True

    @field_validator("scale")
    @classmethod
    def _ordered(cls, value: list[int]) -> list[int]:
        if value[0] >= value[1]:
            raise ValueError(f"scale: expected [lowest, highest] with lowest < highest, got {value}")
        if value[1] - value[0] > 100:
            raise ValueError("scale: at most 100 steps")
        return value


class FactualityParams(JudgedParams):
    #: Score of each verdict (the defaults for verdicts not given).
    scores: dict[Literal["consistent", "subset", "superset", "disagrees"], float] = Field(default_factory=dict)

    @field_validator("scores")
    @classmethod
    def _in_range(cls, value: dict[str, float]) -> dict[str, float]:
        for k, v in value.items():
            if not 0.0 <= v <= 1.0 or not math.isfinite(v):
                raise ValueError(f"scores.{k}: expected a number from 0 to 1, got {v!r}")
        return value


class RelevanceParams(JudgedParams):
    pass


# -- replies ---------------------------------------------------------------------------
class ScoreReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    score: float = Field(ge=0.0, le=1.0)
    reason: str = ""


class FactReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    verdict: Literal["consistent", "subset", "superset", "disagrees"]
    reason: str = ""

    @field_validator("verdict", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


def _scale_reply(lo: int, hi: int) -> type[BaseModel]:
    class ScaleReply(BaseModel):
        model_config = ConfigDict(extra="ignore")

        score: int = Field(ge=lo, le=hi)
        reason: str = ""

    return ScaleReply


# -- checks ----------------------------------------------------------------------------
def _require_endpoint(ctx: EvalContext, view: CaseView, name: str, kind: str) -> None:
    if ctx.offline:
        raise NeedsEndpoint(
            f"{view.source}: assertion {name!r} ({kind}) needs a model endpoint, and none is "
            "configured (set --evals-base-url or OPENAI_BASE_URL, or put an API key in the "
            "environment); deterministic, reference and similar assertions run offline"
        )


def _meta(resp: ChatResponse) -> dict[str, Any]:
    return {"model": resp.model, "cached": resp.cached}


@dataclass
class JudgedCheck:
    """What the judged types share: the judge block, the runs, the threshold."""

    name: str
    kind: str
    judge: JudgeBlock
    threshold: float
    extra: dict[str, Any] = field(default_factory=dict)

    def prompt_fields(self) -> dict[str, Any]:
        return {}

    async def run(self, view: CaseView, ctx: EvalContext) -> Outcome:
        _require_endpoint(ctx, view, self.name, self.kind)
        runs = list(await asyncio.gather(*(self.once(view, ctx, r) for r in range(self.judge.n_runs))))
        value = sum(v for v, _s, _e in runs) / len(runs)
        score = sum(s for _v, s, _e in runs) / len(runs)
        passed = value >= self.threshold
        evidence: dict[str, Any] = {"runs": [e for _v, _s, e in runs]}
        first = runs[0][2]
        for key in ("mode", "verdict", "truncation"):
            if key in first:
                evidence[key] = first[key]
        reason = f"{self.describe(value)} {'>=' if passed else '<'} {self.threshold:g}: {first.get('reason', '')}".strip()
        return Outcome(passed, score, value, reason, evidence)

    def describe(self, value: float) -> str:
        return f"score {value:.3g}"

    async def once(self, view: CaseView, ctx: EvalContext, repeat: int) -> tuple[float, float, dict[str, Any]]:
        raise NotImplementedError

    async def ask(self, ctx: EvalContext, view: CaseView, render: Render, fields: dict[str, str | None],
                  schema: type[BaseModel], repeat: int, **extra: Any) -> tuple[Any, ChatResponse, dict[str, Any]]:
        """Ask the judge for ``render(fields)``, fitted to the model's context by the
        suite's ``truncate`` policy (llm/truncation.py): only ``fields`` (the case's input,
        a reference) may be cut, never the judged output. The third value is the
        evidence of a cut (``{"truncation": ...}``) or empty."""
        from pytest_evals.llm.judge import JSON_MAX_TOKENS
        from pytest_evals.llm.truncation import send_fitted

        async def send(messages: list[dict[str, Any]]) -> tuple[Any, ChatResponse]:
            data, resp = await ctx.judge.json(
                messages, schema=schema, namespace=NAMESPACE, model=self.judge.model,
                temperature=self.judge.temperature, repeat=repeat, **extra,
            )
            return data, resp

        given = {k: v for k, v in fields.items() if v}

        def messages_of(cut: dict[str, str]) -> list[dict[str, Any]]:
            return list(render({**fields, **cut}))

        llm = ctx.llm
        (data, resp), record = await send_fitted(
            llm, send, fields=given, render=messages_of, policy=view.truncate,
            context_tokens=view.context_tokens, reply_room=llm.settings.max_tokens or JSON_MAX_TOKENS,
            model=self.judge.model, what=f"assertion {self.name!r} ({self.kind}) judge prompt",
        )
        return data, resp, ({"truncation": record.to_json()} if record is not None else {})


@dataclass
class RubricCheck(JudgedCheck):
    criteria: str = ""

    async def once(self, view: CaseView, ctx: EvalContext, repeat: int) -> tuple[float, float, dict[str, Any]]:
        reply, resp, cut = await self.ask(
            ctx, view, lambda f: prompts.rubric_messages(self.criteria, self.judge, f["input"], view.output),
            {"input": view.input}, ScoreReply, repeat,
        )
        return reply.score, reply.score, {"score": reply.score, "reason": reply.reason, **_meta(resp), **cut}


@dataclass
class RelevanceCheck(JudgedCheck):
    async def once(self, view: CaseView, ctx: EvalContext, repeat: int) -> tuple[float, float, dict[str, Any]]:
        if not view.input:
            raise CaseInputError(
                f"{view.source}: field 'input': assertion {self.name!r} (answer_relevance) needs the "
                "case's input ('input' or 'question')"
            )
        reply, resp, cut = await self.ask(
            ctx, view, lambda f: prompts.relevance_messages(self.judge, f["input"] or "", view.output),
            {"input": view.input}, ScoreReply, repeat,
        )
        return reply.score, reply.score, {"score": reply.score, "reason": reply.reason, **_meta(resp), **cut}


@dataclass
class FactualityCheck(JudgedCheck):
    scores: dict[str, float] = field(default_factory=dict)

    async def once(self, view: CaseView, ctx: EvalContext, repeat: int) -> tuple[float, float, dict[str, Any]]:
        if not view.references:
            from pytest_evals.families.assertions.reference_checks import missing_reference

            raise missing_reference(view, self.name)
        reply, resp, cut = await self.ask(
            ctx, view,
            lambda f: prompts.factuality_messages(self.judge, f["input"], f["reference"] or "", view.output),
            {"input": view.input, "reference": view.references[0]}, FactReply, repeat,
        )
        score = self.scores[reply.verdict]
        return score, score, {"verdict": reply.verdict, "score": score, "reason": reply.reason, **_meta(resp),
                              **cut}


@dataclass
class GEvalCheck(JudgedCheck):
    criteria: str = ""
    steps: list[str] = field(default_factory=list)
    scale: tuple[int, int] = (1, 5)
    logprobs: bool = True

    def describe(self, value: float) -> str:
        return f"{value:.3g} on [{self.scale[0]}, {self.scale[1]}]"

    async def once(self, view: CaseView, ctx: EvalContext, repeat: int) -> tuple[float, float, dict[str, Any]]:
        lo, hi = self.scale
        extra: dict[str, Any] = {"logprobs": True, "top_logprobs": TOP_LOGPROBS} if self.logprobs else {}
        reply, resp, cut = await self.ask(
            ctx, view,
            lambda f: prompts.g_eval_messages(self.criteria, self.steps, self.scale, self.judge, f["input"],
                                              view.output),
            {"input": view.input}, _scale_reply(lo, hi), repeat, **extra,
        )
        weighted = score_distribution(getattr(resp, "logprobs", None), lo, hi) if self.logprobs else None
        if weighted is None:
            value, mode = float(reply.score), "plain"
            why = ("log-probabilities not asked for (logprobs: false)" if not self.logprobs
                   else "the endpoint returned no log-probabilities for the score")
            evidence: dict[str, Any] = {"mode": mode, "mode_reason": why}
        else:
            value, probs = weighted
            mode = "probability-weighted"
            evidence = {"mode": mode, "probabilities": probs}
        score = clamp01((value - lo) / (hi - lo))
        return value, score, {"score": reply.score, "value": value, "reason": reply.reason, **evidence, **_meta(resp),
                              **cut}


def score_distribution(logprobs: Any, lo: int, hi: int) -> tuple[float, dict[str, float]] | None:
    """G-Eval's expected score: the probabilities the model gave each score at the
    reply's first scale-valued token (from its ``top_logprobs``), renormalised over the
    scale. None when there are none (the endpoint ignored ``logprobs``)."""
    if not isinstance(logprobs, list):
        return None
    allowed = {str(k): k for k in range(lo, hi + 1)}
    for entry in logprobs:
        if not isinstance(entry, dict):
            continue
        token = str(entry.get("token", "")).strip()
        if token not in allowed:
            continue
        probs: dict[int, float] = {}
        alternatives: list[Any] = entry.get("top_logprobs") or [{"token": token, "logprob": entry.get("logprob", 0.0)}]
        for alt in alternatives:
            if not isinstance(alt, dict):
                continue
            t = str(alt.get("token", "")).strip()
            lp = alt.get("logprob")
            if t in allowed and isinstance(lp, (int, float)) and math.isfinite(lp):
                probs[allowed[t]] = probs.get(allowed[t], 0.0) + math.exp(lp)
        total = sum(probs.values())
        if total <= 0:
            return None
        expected = sum(k * p for k, p in probs.items()) / total
        return expected, {str(k): round(p / total, 6) for k, p in sorted(probs.items())}
    return None


# -- building --------------------------------------------------------------------------
def build_judged(kind: str, p: JudgedParams, name: str) -> JudgedCheck:
    if isinstance(p, RubricParams):
        return RubricCheck(name, kind, p.judge, 0.5 if p.threshold is None else p.threshold, criteria=p.text)
    if isinstance(p, GEvalParams):
        lo, hi = p.scale
        threshold = (lo + hi) / 2 if p.threshold is None else p.threshold
        if not lo <= threshold <= hi:
            raise AssertionProblem("threshold", f"threshold {threshold:g} is outside the scale [{lo}, {hi}]")
        steps = p.steps or prompts.default_steps((lo, hi))
        return GEvalCheck(name, kind, p.judge, threshold, criteria=p.criteria, steps=list(steps), scale=(lo, hi),
                          logprobs=p.logprobs)
    if isinstance(p, FactualityParams):
        scores: dict[str, float] = dict(DEFAULT_FACT_SCORES)
        scores.update({str(k): v for k, v in p.scores.items()})
        return FactualityCheck(name, kind, p.judge, 0.5 if p.threshold is None else p.threshold, scores=scores)
    return RelevanceCheck(name, kind, p.judge, 0.5 if p.threshold is None else p.threshold)


JUDGED: dict[str, type[JudgedParams]] = {
    "llm_rubric": RubricParams,
    "g_eval": GEvalParams,
    "factuality": FactualityParams,
    "answer_relevance": RelevanceParams,
}

#: Silence "unused" for the error type re-exported to the task.
__all__ = ["JUDGED", "JudgeError", "NeedsEndpoint", "build_judged", "score_distribution"]
