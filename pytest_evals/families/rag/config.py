"""The ``rag_answers`` suite configuration: GOV.UK's ``metrics: [{name, threshold, model, temperature}]``,
plus a ``judge:`` block (suite-wide and per metric, :mod:`.judge_block`) and DeepEval
metric classes by import path (``deepeval:``, :mod:`.deepeval_metric`)."""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from pytest_evals.families.rag.judge_block import JudgeBlock
from pytest_evals.suites.suite_config import MetricSpec, SuiteConfig

MetricName = Literal[
    "relevance",
    "faithfulness",
    "context_relevancy",
    "coherence",
    "factual_correctness",
    "factual_precision",
    "factual_recall",
    "absence_of_factual_contradictions",
    "bias",
]

#: Metrics where a lower score is better: the case passes when score <= threshold.
LOWER_IS_BETTER: frozenset[str] = frozenset({"bias"})

#: DeepEval metric classes whose score is better when lower (their ``is_successful``
#: is ``score <= threshold``).
LOWER_IS_BETTER_CLASSES: frozenset[str] = frozenset(
    {"BiasMetric", "ToxicityMetric", "HallucinationMetric", "PIILeakageMetric", "MisuseMetric",
     "NonAdviceMetric", "RoleViolationMetric"}
)

#: Names a metric of one's own may not take: the suite's own aggregates.
RESERVED_NAMES: frozenset[str] = frozenset({"errors", "cases", "all_metrics_pass_rate"})
#: A metric of one's own is named like an identifier (its name is a gate path).
OWN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: ``package.module:ClassName`` (a dotted attribute path after the colon is allowed).
IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")

#: Per-case thresholds when a metric entry gives none: GOV.UK Chat's own settings
#: (factual_recall is not in theirs; 0.8 is ours, in line with their other graded metrics).
DEFAULT_THRESHOLDS: dict[str, float] = {
    "faithfulness": 1.0,
    "relevance": 0.8,
    "factual_correctness": 1.0,
    "context_relevancy": 0.8,
    "coherence": 0.8,
    "factual_recall": 0.8,
    # GOV.UK Chat's current settings for the metrics they added later.
    "factual_precision": 1.0,
    "absence_of_factual_contradictions": 1.0,
    "bias": 0.0,
}


class RagMetricSpec(MetricSpec):
    """One metric of a rag_answers suite; unknown keys are typos and rejected."""

    # populate_by_name: a run folder's config.json holds the dumped field name
    # (``lower_is_better_``), and rescore must read back what the run wrote.
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    #: One of ours (:data:`MetricName`), or any name for a metric given by ``deepeval:``.
    name: str = Field(min_length=1)
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    temperature: float | None = Field(default=None, ge=0.0)
    #: Offline (embedding) judge only: the cosine similarity that counts as a match.
    similarity: float | None = Field(default=None, ge=-1.0, le=1.0)
    #: The judge in the suite author's words (overrides the suite's ``judge:`` field by field).
    judge: JudgeBlock | None = None
    #: A DeepEval metric class (``deepeval.metrics:FaithfulnessMetric``, or any importable
    #: class built on DeepEval's ``BaseMetric``) run with our client as its model.
    deepeval: str | None = None
    #: Keyword arguments for that class (``penalize_ambiguous_claims: true``...).
    options: dict[str, Any] = Field(default_factory=dict)
    #: A metric of your own where lower is better (default: ours and DeepEval's known ones).
    lower_is_better_: bool | None = Field(default=None, alias="lower_is_better")

    @field_validator("model")
    @classmethod
    def _model_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be blank (leave it out for the session's --evals-model)")
        return value

    @field_validator("deepeval")
    @classmethod
    def _import_path(cls, value: str | None) -> str | None:
        if value is not None and not IMPORT_PATH.match(value.strip()):
            raise ValueError(f"expected 'package.module:ClassName', got {value!r}")
        return value.strip() if value is not None else None

    @model_validator(mode="after")
    def _known_or_deepeval(self) -> RagMetricSpec:
        ours = get_args(MetricName)
        if self.deepeval is None:
            if self.name not in ours:
                # Located at the name (metrics.0.name), where the typo is.
                message = (f"unknown metric {self.name!r}; known: {', '.join(ours)} "
                           "(or give 'deepeval: package.module:Class' for a metric of your own)")
                raise ValidationError.from_exception_data(type(self).__name__, [InitErrorDetails(
                    type=PydanticCustomError("unknown_metric", message), loc=("name",), input=self.name)])
            if self.options:
                raise ValueError("'options' are keyword arguments of a 'deepeval' class; this metric has none")
        elif self.name not in ours:
            if not OWN_NAME.match(self.name) or self.name in RESERVED_NAMES:
                raise ValueError(f"metric name {self.name!r}: use letters, digits and '_' "
                                 f"(not {', '.join(sorted(RESERVED_NAMES))}): it is a gate path")
            if self.threshold is None:
                raise ValueError(f"metric {self.name!r} is not one of ours: give it a 'threshold'")
        if self.lower_is_better_ is not None and self.deepeval is None:
            raise ValueError("'lower_is_better' is for a 'deepeval' class of your own; ours know their direction")
        if self.judge is not None:
            for field in ("model", "temperature"):
                if getattr(self, field) is not None and getattr(self.judge, field) is not None:
                    raise ValueError(f"give '{field}' once: both the metric and its 'judge' block set it")
        return self

    @property
    def effective_threshold(self) -> float:
        return self.threshold if self.threshold is not None else DEFAULT_THRESHOLDS[self.name]

    @property
    def lower_is_better(self) -> bool:
        if self.lower_is_better_ is not None:
            return self.lower_is_better_
        if self.deepeval is not None:
            return self.deepeval.rsplit(":", 1)[1].rsplit(".", 1)[-1] in LOWER_IS_BETTER_CLASSES
        return self.name in LOWER_IS_BETTER

    def own_judge_fields(self) -> JudgeBlock | None:
        """GOV.UK's per-metric ``model``/``temperature`` as a judge block (None if neither)."""
        given = {f: getattr(self, f) for f in ("model", "temperature") if getattr(self, f) is not None}
        return JudgeBlock.model_validate(given) if given else None


class RagConfig(SuiteConfig):
    # A dumped config (config.json of a run folder) names the kept fields by their Python name.
    model_config = ConfigDict(populate_by_name=True)

    metrics: list[RagMetricSpec] = Field(min_length=1)  # type: ignore[assignment]
    #: Fields of a file in GOV.UK's layout that no pytest_evals model knows (kept, not used).
    govuk_unknown_fields: dict[str, Any] = Field(default_factory=dict, alias="__govuk_unknown_fields__")
    #: Read from a file in GOV.UK's layout: their data rules apply to its rows.
    govuk_layout: bool = Field(default=False, alias="__govuk_layout__")
    #: Faithfulness counts an "idk" claim (the context says nothing either way) against
    #: the answer, as GOV.UK Chat's DeepEval setting ``penalize_ambiguous_claims=True``
    #: does; false counts only contradicted claims against it.
    penalize_ambiguous_claims: bool = True
    #: GOV.UK Chat config fields, accepted so its files load unchanged: the model the
    #: answers were generated with, and the judge provider (informational: the endpoint
    #: comes from the LLM settings); guardrail_type as every GOV.UK Chat task accepts it.
    claude_generation_model: str | None = None
    guardrail_type: str | None = None
    provider: str | None = None
    #: The judge in the suite author's words, for every judged metric (:mod:`.judge_block`).
    judge: JudgeBlock | None = None
    #: GOV.UK Chat's behaviour (their judge wording, their context text, their DeepEval
    #: metrics when installed). Default: detected from the file (:mod:`.govuk_shape`).
    govuk: bool | None = None
    #: Score our metric names with the DeepEval classes GOV.UK's configs use: ``auto``
    #: (GOV.UK-shaped suites, when DeepEval is installed), ``always`` or ``never``.
    deepeval_metrics: Literal["auto", "always", "never"] = "auto"
    #: What a judged metric's prompt longer than the model's context does
    #: (llm/truncation.py): ``none`` sends it (a context_length ERROR), ``longest`` cuts
    #: the retrieved context (never the answer or question judged), ``skip`` records the
    #: case as skipped. ``context_tokens`` is the limit when the server publishes none.
    truncate: Literal["none", "longest", "skip"] = "none"
    context_tokens: int | None = Field(default=None, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _their_rules(cls, data: Any, info: Any) -> Any:  # info: pydantic.ValidationInfo
        """A file in GOV.UK's layout: their unknown-field and judge-model rules (:mod:`.govuk_rules`)."""
        from pytest_evals.families.rag.govuk_rules import keep_unknown

        known = {f.alias or name for name, f in cls.model_fields.items()} | set(cls.model_fields)
        metric_known = {f.alias or name for name, f in RagMetricSpec.model_fields.items()} | set(RagMetricSpec.model_fields)
        return keep_unknown(data, known, metric_known, info.context)

    @field_validator("metrics")
    @classmethod
    def _unique_names(cls, value: list[RagMetricSpec]) -> list[RagMetricSpec]:
        seen: set[str] = set()
        for spec in value:
            if spec.name in seen:
                raise ValueError(f"metric {spec.name!r} is listed twice")
            seen.add(spec.name)
        return value
