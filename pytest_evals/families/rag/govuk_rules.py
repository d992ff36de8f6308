"""GOV.UK Chat's config rules for their ``config/defaults/rag_answers.yaml`` (their layout).

Their ``TaskConfig`` and ``MetricConfig`` are pydantic models with the default
``extra="ignore"``: a field they do not know, at the top or in a metric entry, is dropped
without a word. In a file in their layout (no ``task:``, named after the task) such a field
is kept (``govuk_unknown_fields``) and noted once per file in the run's summaries, never an
error; a pytest_evals suite still rejects it.

Their ``LLMJudgeModelConfig.model`` is an enum: a judge model outside their list is
refused by their tool, and refused here for a file in their layout, naming the metric's
field (give the file a ``task: rag_answers`` line to judge with any model).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

#: Their ``LLMJudgeModel`` values (rag_answers/data_models/config.py).
LLM_JUDGE_MODELS: tuple[str, ...] = (
    "gpt-4o-mini", "gpt-4o", "eu.amazon.nova-micro-v1:0", "eu.amazon.nova-pro-v1:0", "gemini-1.5-pro-002",
    "gemini-1.5-flash-002", "openai.gpt-oss-20b-1:0", "openai.gpt-oss-120b-1:0",
)

#: Set on a config read from a file in their layout (their data rules apply to its rows).
LAYOUT_FLAG = "__govuk_layout__"
#: Where a file's unknown fields are kept (an alias no YAML file uses by accident).
UNKNOWN_FIELDS = "__govuk_unknown_fields__"


def keep_unknown(data: Any, known: set[str], metric_known: set[str], context: Any) -> Any:
    """Move the fields of a file in their layout that no model of ours knows aside, note
    them once, and check each metric's judge model against their list."""
    from pytest_evals.families.classification.config_checks import their_layout, warn_unknown_fields

    if not isinstance(data, dict) or not their_layout(context):
        return data
    data = {**data, LAYOUT_FLAG: True}
    unknown = {k: v for k, v in data.items() if k not in known}
    kept = {k: v for k, v in data.items() if k in known}
    metrics = kept.get("metrics")
    errors: list[InitErrorDetails] = []
    if isinstance(metrics, list):
        cleaned = []
        for i, entry in enumerate(metrics):
            if not isinstance(entry, Mapping):
                cleaned.append(entry)
                continue
            extra = {k: v for k, v in entry.items() if k not in metric_known}
            for key, value in extra.items():
                unknown[f"metrics.{i}.{key}"] = value
            cleaned.append({k: v for k, v in entry.items() if k in metric_known})
            model = entry.get("model")
            if model is not None and model not in LLM_JUDGE_MODELS:
                message = (f"{model!r} is not one of GOV.UK Chat's judge models (their LLMJudgeModel): "
                           f"{', '.join(LLM_JUDGE_MODELS)}; their tool refuses it (a file with "
                           "'task: rag_answers' may name any model)")
                # no context given: the message is used as it is (braces in a name included)
                errors.append(InitErrorDetails(type=PydanticCustomError("govuk_judge_model", message),
                                               loc=("metrics", i, "model"), input=model))
        kept["metrics"] = cleaned
    if errors:
        raise ValidationError.from_exception_data("RagConfig", errors)
    if unknown:
        warn_unknown_fields(str(data.get("task", "rag_answers")), unknown, context)
        kept[UNKNOWN_FIELDS] = unknown
    return kept


#: Their ``EvaluationTestCase`` and ``StructuredContext``: the fields a scored row must have
#: (``None`` refused), beyond what our metrics read.
ROW_FIELDS: tuple[str, ...] = ("llm_answer", "structured_contexts", "actual_opensearch_index", "model")
CHUNK_FIELDS: tuple[str, ...] = ("title", "heading_hierarchy", "html_content", "exact_path", "base_path")


def row_problems(data: Any) -> list[str]:
    """What their ``EvaluationTestCase`` refuses in a row scored as it is (pydantic's words)."""
    if not isinstance(data, Mapping):
        return []
    where = "GOV.UK Chat's rag_answers.EvaluationTestCase"
    out = []
    for field in ROW_FIELDS:
        if field not in data:
            out.append(f"field {field!r}: Field required ({where} requires it)")
        elif data[field] is None:
            out.append(f"field {field!r}: Input should not be null ({where} requires a value)")
    for i, chunk in enumerate(data.get("structured_contexts") or []):
        if not isinstance(chunk, Mapping):
            continue
        for field in CHUNK_FIELDS:
            if chunk.get(field) is None:
                out.append(f"field 'structured_contexts.{i}.{field}': Field required "
                           "(GOV.UK Chat's rag_answers.StructuredContext requires it)")
    return out
