"""The ``assertions`` suite configuration and the ``judge:`` block of judged assertions.

The suite's ``assert:`` list and ``metrics:`` entries stay plain mappings here: each is
checked by :mod:`assertion_spec` when the suite is collected, so a malformed assertion
is one suite error naming the file, the line and the field (pydantic's messages know no
line), and an unknown key of one type is told apart from a key of another.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pytest_evals.suites.suite_config import SuiteConfig


class JudgeExample(BaseModel):
    """A few-shot example shown to the judge: an output and the score it deserves."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    output: str
    score: float
    input: str | None = None
    reason: str | None = None


class JudgeBlock(BaseModel):
    """How a judged assertion asks its judge: your model, words and examples.

    ``criteria`` are added to the assertion's own; ``system_prompt`` replaces the
    default one; ``n_runs`` asks the judge that many times (distinct cache entries) and
    scores the mean.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    model: str | None = None
    system_prompt: str | None = Field(default=None, min_length=1)
    #: What the judged system is, completing "outputs of ..." in the default persona (the
    #: same field as rag_answers' judge block); never together with ``system_prompt``.
    domain: str | None = Field(default=None, min_length=1)
    criteria: str | None = None
    examples: list[JudgeExample] = Field(default_factory=list)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    n_runs: int = Field(default=1, ge=1, le=20)

    @field_validator("criteria", mode="before")
    @classmethod
    def _criteria_list(cls, value: Any) -> Any:
        # A list of rules (as rag_answers' judge block takes them) reads as one bulleted text.
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return "\n".join(f"- {v.strip()}" for v in value if v.strip()) or None
        return value

    @model_validator(mode="after")
    def _one_persona(self) -> JudgeBlock:
        if self.system_prompt is not None and self.domain is not None:
            raise ValueError("give either 'system_prompt' (the judge's whole persona) or 'domain', not both")
        return self

    @field_validator("examples", mode="before")
    @classmethod
    def _example_text(cls, value: Any) -> Any:
        # ``examples: ["a polite reply"]`` is short for an example scoring 1.
        if isinstance(value, list):
            return [{"output": v, "score": 1.0} if isinstance(v, str) else v for v in value]
        return value


class AssertionsConfig(SuiteConfig):
    """``task: assertions``: the suite-level assertions and how a case passes."""

    #: Applied to every case; each entry is a mapping with a ``type``.
    assert_: list[Any] = Field(default_factory=list, alias="assert")
    #: Named judged metrics: ``{name, criteria, scale, threshold, steps, judge}``;
    #: each is applied to every case and reported as a metric of its own.
    metrics: list[Any] = Field(default_factory=list)
    #: ``all``: a case passes when every assertion passes; ``weighted``: when its
    #: weighted score reaches ``threshold``. Default: ``weighted`` when ``threshold`` is
    #: given, else ``all``.
    pass_rule: Literal["all", "weighted"] | None = None
    #: The weighted score (weights of the assertions, scores in [0, 1]) a case needs.
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    #: Where a case's answer, question and reference(s) are (first field present wins).
    output_field: str | None = None
    input_field: str | None = None
    reference_field: str | None = None
    #: What a judged assertion's prompt longer than the model's context does
    #: (llm/truncation.py): ``none`` sends it (a context_length ERROR), ``longest`` cuts
    #: the case's input or reference (never the judged output), ``skip`` records the case
    #: as skipped. ``context_tokens`` is the limit when the server publishes none.
    truncate: Literal["none", "longest", "skip"] = "none"
    context_tokens: int | None = Field(default=None, gt=0)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # Bare metric names become {"name": ...} through the base class's own validator; a
    # custom metric also needs its criteria, which the spec check reports as missing.

    @property
    def effective_pass_rule(self) -> str:
        if self.pass_rule is not None:
            return self.pass_rule
        return "weighted" if self.threshold is not None else "all"
