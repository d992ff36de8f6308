"""The ``rag_answers`` suite configuration: GOV.UK's ``metrics: [{name, threshold, model, temperature}]``."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator

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

    model_config = ConfigDict(extra="forbid")

    name: MetricName
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    temperature: float | None = Field(default=None, ge=0.0)
    #: Offline (embedding) judge only: the cosine similarity that counts as a match.
    similarity: float | None = Field(default=None, ge=-1.0, le=1.0)

    @property
    def effective_threshold(self) -> float:
        return self.threshold if self.threshold is not None else DEFAULT_THRESHOLDS[self.name]

    @property
    def lower_is_better(self) -> bool:
        return self.name in LOWER_IS_BETTER


class RagConfig(SuiteConfig):
    metrics: list[RagMetricSpec] = Field(min_length=1)  # type: ignore[assignment]
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

    @field_validator("metrics")
    @classmethod
    def _unique_names(cls, value: list[RagMetricSpec]) -> list[RagMetricSpec]:
        seen: set[str] = set()
        for spec in value:
            if spec.name in seen:
                raise ValueError(f"metric {spec.name!r} is listed twice")
            seen.add(spec.name)
        return value
