"""The ``judge:`` block: a judged metric in the suite author's own words.

A rag_answers suite may give one block at the top level (every judged metric) and one
per metric (that metric only); a metric's block overrides the suite's field by field::

    judge:
      domain: "a customer-support assistant for Acme's billing product"
      criteria: ["Quoting a price the context does not give is unfaithful."]
      examples:
        - {input: "Q: Can I pay by cheque? A: Yes, any time.", output: "claim 'any time' is 'idk'"}
      temperature: 0
      n_runs: 3
      combine: majority
    metrics:
      - faithfulness
      - {name: relevance, judge: {model: gpt-4o, criteria: ["Upselling is off topic."]}}

The fields:

- ``model``, ``temperature``: sent with the judge's requests (GOV.UK's per-metric
  ``model``/``temperature`` keep working; giving a metric both ``model`` and
  ``judge.model`` is an error, not a guess);
- ``system_prompt`` (the judge's whole persona, verbatim) or ``domain`` (what the judged
  assistant is, in a sentence that completes "answers given by ..."), never both. With
  neither, GOV.UK-shaped suites get GOV.UK Chat's government-services wording and every
  other suite a neutral one (:func:`system_message`);
- ``criteria``: extra rules the judge applies on top of the metric's own;
- ``examples``: worked examples (``input``: what was judged, ``output``: the judgement),
  shown to the judge before the case;
- ``n_runs``: judge runs per case for this metric (default: the suite's ``n_runs``);
- ``combine``: how the runs decide the case: ``mean`` (GOV.UK's rule: the mean score
  against the threshold) or ``majority`` (the case passes when more than half of its
  runs pass). Both the mean and the majority are recorded either way.

A future assertions family may share this model; it depends on nothing rag-specific.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: How the runs of a metric decide a case.
Combine = Literal["mean", "majority"]

#: Appended to every persona: the reply format the prompts' parsers need.
FORMAT_RULE = (
    "You follow the instructions exactly and reply with a single JSON object, without "
    "markdown fences or any text outside the JSON."
)

#: The neutral persona of a suite that names no domain and is not GOV.UK-shaped.
GENERIC_PERSONA = (
    "You are a meticulous evaluator of answers given by an assistant that answers "
    "questions from retrieved documents."
)

#: A suite's ``domain`` completes this sentence.
DOMAIN_PERSONA = "You are a meticulous evaluator of answers given by {domain}."

#: Each text field's limit: a judge prompt is not a place for a book.
MAX_TEXT = 20_000


class JudgeExample(BaseModel):
    """One worked example: what was judged and the judgement the authors expect."""

    model_config = ConfigDict(extra="forbid", strict=True)

    input: str = Field(min_length=1, max_length=MAX_TEXT)
    output: str = Field(min_length=1, max_length=MAX_TEXT)


class JudgeBlock(BaseModel):
    """A ``judge:`` block, as written in the suite (every field optional). Strict: a
    quoted number or a 1 for true is a typo in a CI gate's file, not a guess to make."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    model: str | None = Field(default=None, min_length=1)
    system_prompt: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT)
    domain: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT)
    criteria: list[str] = Field(default_factory=list)
    examples: list[JudgeExample] = Field(default_factory=list)
    temperature: float | None = Field(default=None, ge=0.0)
    n_runs: int | None = Field(default=None, ge=1)
    combine: Combine | None = None

    @field_validator("criteria", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        # `criteria: "one rule"` reads as a list of one.
        return [value] if isinstance(value, str) else value

    @field_validator("criteria")
    @classmethod
    def _criteria_not_blank(cls, value: list[str]) -> list[str]:
        for i, text in enumerate(value):
            if not text.strip():
                raise ValueError(f"criterion {i} is empty")
            if len(text) > MAX_TEXT:
                raise ValueError(f"criterion {i} is over {MAX_TEXT} characters")
        return value

    @field_validator("system_prompt", "domain")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be blank")
        return value

    @model_validator(mode="after")
    def _one_persona(self) -> JudgeBlock:
        if self.system_prompt is not None and self.domain is not None:
            raise ValueError("give either 'system_prompt' (the judge's whole persona) or 'domain', not both")
        return self


@dataclass(frozen=True)
class ResolvedJudge:
    """A metric's judge settings once the metric's block, its GOV.UK fields, the suite's
    block and the suite's defaults have been merged."""

    model: str | None
    temperature: float | None
    system: str
    criteria: tuple[str, ...]
    examples: tuple[JudgeExample, ...]
    n_runs: int
    combine: Combine
    #: Where the persona came from: "system_prompt", "domain", "govuk" or "generic".
    persona: str

    def system_message(self) -> str:
        """The judge's system message: persona, then the authors' criteria and examples."""
        parts = [self.system]
        if self.criteria:
            rules = "\n".join(f"- {c.strip()}" for c in self.criteria)
            parts.append(f"Apply these criteria of the evaluation's authors as well as the task's own:\n{rules}")
        if self.examples:
            shown = "\n\n".join(
                f"Example {i}\nInput:\n{e.input.strip()}\nJudgement:\n{e.output.strip()}"
                for i, e in enumerate(self.examples, start=1)
            )
            parts.append(f"Worked examples from the evaluation's authors:\n\n{shown}")
        return "\n\n".join(parts)


def _persona(block: JudgeBlock, govuk_persona: str | None) -> tuple[str, str]:
    if block.system_prompt is not None:
        return block.system_prompt.strip(), "system_prompt"
    if block.domain is not None:
        return f"{DOMAIN_PERSONA.format(domain=block.domain.strip())} {FORMAT_RULE}", "domain"
    if govuk_persona is not None:
        return govuk_persona, "govuk"
    return f"{GENERIC_PERSONA} {FORMAT_RULE}", "generic"


def merge_blocks(blocks: Sequence[JudgeBlock | None]) -> JudgeBlock:
    """Field by field, the last block that sets a field wins (suite first, metric last).

    A persona is one choice: a metric's ``domain`` replaces the suite's ``system_prompt``
    rather than clashing with it.
    """
    merged: dict[str, object] = {}
    for block in blocks:
        if block is None:
            continue
        given = block.model_fields_set
        if given & {"system_prompt", "domain"}:
            merged.pop("system_prompt", None)
            merged.pop("domain", None)
        for name in given:
            merged[name] = getattr(block, name)
    return JudgeBlock.model_validate(merged)


def resolve_judge(
    blocks: Sequence[JudgeBlock | None], *, n_runs: int, govuk_persona: str | None
) -> ResolvedJudge:
    """``blocks`` from the widest to the narrowest (the suite's, the metric's own
    ``model``/``temperature``, the metric's block); ``n_runs``: the suite's."""
    block = merge_blocks(blocks)
    system, persona = _persona(block, govuk_persona)
    return ResolvedJudge(
        model=block.model,
        temperature=block.temperature,
        system=system,
        criteria=tuple(block.criteria),
        examples=tuple(block.examples),
        n_runs=block.n_runs if block.n_runs is not None else n_runs,
        combine=block.combine or "mean",
        persona=persona,
    )
