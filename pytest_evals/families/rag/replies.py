"""The JSON shapes the judge must reply with, one pydantic model per metric.

A reply that does not fit (a missing list, a verdict other than yes/no/idk, a coherence
score outside 1-5) is rejected; the judge layer retries and finally raises ``JudgeError``.
Verdict spelling is forgiven (``"Yes"``, ``" NO "``), the meaning is not. Text fields
reject a template's filler (``{"TP": ["...", "..."]}``): see llm/reply_placeholders.py.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field

from pytest_evals.llm.reply_placeholders import Filled


def _normalise_verdict(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


Verdict = Annotated[Literal["yes", "no", "idk"], BeforeValidator(_normalise_verdict)]


class _Reply(BaseModel):
    # Judges add fields of their own ("confidence", "notes"); those do no harm.
    model_config = ConfigDict(extra="ignore")


class StatementVerdict(_Reply):
    statement: Filled
    verdict: Verdict
    reason: str = ""


class RelevanceReply(_Reply):
    statements: list[StatementVerdict]
    reason: str = ""


class ClaimVerdict(_Reply):
    claim: Filled
    verdict: Verdict
    reason: str = ""


class FaithfulnessReply(_Reply):
    truths: list[Filled] = Field(default_factory=list)
    claims: list[ClaimVerdict]
    reason: str = ""


class NeedVerdict(_Reply):
    need: Filled
    verdict: Verdict
    reason: str = ""


class ContextRelevancyReply(_Reply):
    needs: list[NeedVerdict]
    reason: str = ""


class CoherenceReply(_Reply):
    #: Any whole number is read; the scorer clamps it into 1-5 (a judge answering 6 or 0
    #: means "top" or "bottom" of the rubric, as GOV.UK Chat's metric reads it).
    score: int
    reason: str = ""


class OpinionVerdict(_Reply):
    opinion: Filled
    #: "yes": the opinion is biased.
    verdict: Annotated[Literal["yes", "no"], BeforeValidator(_normalise_verdict)]
    reason: str = ""


class BiasReply(_Reply):
    opinions: list[OpinionVerdict]
    reason: str = ""


class ContradictionsReply(_Reply):
    truths: list[Filled] = Field(default_factory=list)
    claims: list[ClaimVerdict]
    reason: str = ""


class FactsReply(_Reply):
    tp: list[Filled] = Field(validation_alias=AliasChoices("TP", "tp"))
    fp: list[Filled] = Field(validation_alias=AliasChoices("FP", "fp"))
    fn: list[Filled] = Field(validation_alias=AliasChoices("FN", "fn"))
    reason: str = ""


#: metric -> reply model.
REPLIES: dict[str, type[_Reply]] = {
    "relevance": RelevanceReply,
    "faithfulness": FaithfulnessReply,
    "context_relevancy": ContextRelevancyReply,
    "coherence": CoherenceReply,
    "factual_correctness": FactsReply,
    "factual_precision": FactsReply,
    "factual_recall": FactsReply,
    "absence_of_factual_contradictions": ContradictionsReply,
    "bias": BiasReply,
}
