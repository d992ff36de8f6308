"""GOV.UK Chat's data rules for the rows of a file in their layout.

Their tool reads each scored row into its task's ``EvaluationResult`` pydantic model, which
requires some fields our tasks can do without: ``model`` (every task but retrieval),
``confidence_score`` (question_router), the four fields of every search result and
``actual_opensearch_index`` (retrieval), the ``*_topic`` keys (topic_tagger, where ``null``
is a value but a missing key is not). A row without one stops their whole run; here it is
that case's ERROR, naming the file, the line and the field, in pydantic's words. Suites of
ours (``task:`` given, ``*.eval.yaml``) keep our own, looser rules; ``generate: true`` rows
are checked by the target's reply handling instead (their generate step builds the model).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: task -> (their model, ((field, may be null), ...)) for a row that is scored as it is.
REQUIRED: dict[str, tuple[str, tuple[tuple[str, bool], ...]]] = {
    "jailbreak_guardrails": ("jailbreak_guardrails.EvaluationResult", (("model", False),)),
    "output_guardrails": ("output_guardrails.EvaluationResult", (("message", False), ("model", False))),
    "question_router": ("question_router.EvaluationResult", (("confidence_score", False), ("model", False))),
    "retrieval": ("retrieval.EvaluationResult", (("expected_exact_paths", False), ("actual_opensearch_index", False))),
    "topic_tagger": ("topic_tagger.EvaluationResult", (
        ("actual_primary_topic", True), ("expected_secondary_topic", True), ("actual_secondary_topic", True),
        ("model", True))),
}

#: Their retrieval ``SearchResult``: every field required, none null.
SEARCH_RESULT_FIELDS: tuple[str, ...] = ("exact_path", "chunk_uid", "weighted_score", "semantic_score")


def problems(task: str, data: Any) -> list[str]:
    """What their model would refuse in ``data`` (pydantic's messages, their model named)."""
    rule = REQUIRED.get(task)
    if rule is None or not isinstance(data, Mapping):
        return []
    model, fields = rule
    out = []
    for field, nullable in fields:
        if field not in data:
            out.append(f"field {field!r}: Field required (GOV.UK Chat's {model} requires it)")
        elif data[field] is None and not nullable:
            out.append(f"field {field!r}: Input should not be null (GOV.UK Chat's {model} requires a value)")
    if task == "retrieval":
        for i, hit in enumerate(data.get("actual_search_results") or []):
            if not isinstance(hit, Mapping):
                continue
            for field in SEARCH_RESULT_FIELDS:
                if hit.get(field) is None:
                    out.append(f"field 'actual_search_results.{i}.{field}': Field required "
                               "(GOV.UK Chat's retrieval.SearchResult requires it)")
    return out


def check_row(task: str, data: Any, source: str, layout: bool, generate: bool) -> None:
    """Raise the case's input error when a row of a file in their layout breaks their rules."""
    if not layout or generate:
        return
    found = problems(task, data)
    if found:
        from pytest_evals.model.errors import CaseInputError

        raise CaseInputError(f"{source}: " + "; ".join(found))
