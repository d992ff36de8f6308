"""A ``rag_answers`` case, with the fields of GOV.UK Chat's data set, and what each metric reads.

The model only insists on ``question``: which other fields a case needs depends on the
suite's metrics (``factual_correctness`` needs ``ideal_answer``, ``relevance`` does not)
and on ``generate`` (the target produces ``llm_answer`` and ``structured_contexts``), so
those checks live in :func:`missing_fields` rather than in the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

#: Every metric the task knows, in the order reports list them.
METRIC_NAMES: tuple[str, ...] = (
    "relevance",
    "faithfulness",
    "context_relevancy",
    "coherence",
    "factual_correctness",
    "factual_precision",
    "factual_recall",
    "absence_of_factual_contradictions",
    "bias",
)

#: The case fields each metric reads.
METRIC_FIELDS: dict[str, tuple[str, ...]] = {
    "relevance": ("question", "llm_answer"),
    "faithfulness": ("question", "llm_answer", "structured_contexts"),
    "context_relevancy": ("question", "structured_contexts"),
    "coherence": ("question", "llm_answer"),
    "factual_correctness": ("question", "llm_answer", "ideal_answer"),
    "factual_precision": ("question", "llm_answer", "ideal_answer"),
    "factual_recall": ("question", "llm_answer", "ideal_answer"),
    "absence_of_factual_contradictions": ("question", "llm_answer", "ideal_answer"),
    "bias": ("question", "llm_answer"),
}

#: Fields the system under test produces when the suite has ``generate: true``.
GENERATED_FIELDS: tuple[str, ...] = ("llm_answer", "structured_contexts")


class StructuredContext(BaseModel):
    """One retrieved chunk (an OpenSearch chunk in GOV.UK Chat)."""

    model_config = ConfigDict(extra="allow")

    exact_path: str
    title: str
    heading_hierarchy: list[str] | None = None
    description: str | None = None
    html_content: str


class RagCase(BaseModel):
    """One line of a ``rag_answers`` JSONL file; extra fields (id, base_path...) are kept."""

    model_config = ConfigDict(extra="allow")

    question: str
    ideal_answer: str | None = None
    llm_answer: str | None = None
    structured_contexts: list[StructuredContext] | None = None

    @field_validator("question")
    @classmethod
    def _question_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


def is_missing(case: RagCase, field: str) -> bool:
    """None or blank text counts as missing; an empty context list is a real (empty) retrieval."""
    value: Any = getattr(case, field)
    if value is None:
        return True
    return isinstance(value, str) and not value.strip()


def missing_fields(
    case: RagCase,
    metrics: Iterable[str],
    fields: Iterable[str] | None = None,
    needs: Mapping[str, tuple[str, ...]] | None = None,
) -> list[tuple[str, str]]:
    """(field, metric) pairs the case lacks, restricted to ``fields`` when given; ``needs``
    gives the fields of metrics of one's own (DeepEval classes)."""
    allowed = set(fields) if fields is not None else None
    missing: list[tuple[str, str]] = []
    for metric in metrics:
        for field in (needs or {}).get(metric) or METRIC_FIELDS.get(metric, ("question",)):
            if allowed is not None and field not in allowed:
                continue
            if is_missing(case, field):
                missing.append((field, metric))
    return missing


def describe_missing(missing: list[tuple[str, str]]) -> str:
    """``field 'ideal_answer' (needed by factual_correctness, factual_recall) is missing or empty``."""
    by_field: dict[str, list[str]] = {}
    for field, metric in missing:
        by_field.setdefault(field, []).append(metric)
    return "; ".join(
        f"field {field!r} (needed by metric {', '.join(metrics)}) is missing or empty"
        for field, metrics in by_field.items()
    )
