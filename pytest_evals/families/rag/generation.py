"""``generate: true``: complete a case with what the system under test produced.

A target returns a JSON object with ``llm_answer`` and ``structured_contexts`` (the
data set's own names). Shorter spellings are accepted: ``answer``/``text`` for the answer
(a model target returns ``{"text": ...}``), ``contexts`` for the chunks, or a bare string
as the answer. A target that only answers keeps the case's own ``structured_contexts``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from pytest_evals.families.rag.cases import (
    GENERATED_FIELDS,
    RagCase,
    describe_missing,
    missing_fields,
)
from pytest_evals.model.errors import TargetError
from pytest_evals.tasks.task_contract import validation_message

ANSWER_ALIASES: tuple[str, ...] = ("llm_answer", "answer", "text")
CONTEXT_ALIASES: tuple[str, ...] = ("structured_contexts", "contexts")
PROTECTED: tuple[str, ...] = ("question", "ideal_answer", "id")


def _first(output: dict[str, Any], names: Sequence[str]) -> tuple[bool, Any]:
    for name in names:
        if name in output:
            return True, output[name]
    return False, None


def merge_output(case: RagCase, output: Any, where: str, metrics: Sequence[str]) -> RagCase:
    """The case with the target's answer and contexts; ``where`` names case and target."""
    if isinstance(output, str):
        output = {"llm_answer": output}
    if not isinstance(output, dict):
        raise TargetError(f"{where}: expected a JSON object with 'llm_answer', got {type(output).__name__}")
    data = case.model_dump(mode="json")
    has_answer, answer = _first(output, ANSWER_ALIASES)
    if has_answer:
        data["llm_answer"] = answer
    has_contexts, contexts = _first(output, CONTEXT_ALIASES)
    if has_contexts:
        data["structured_contexts"] = contexts
    for key, value in output.items():
        # Other outputs (model name, retrieval scores) are kept in generated.jsonl; the
        # target may not rewrite what the case asked or expected.
        if key not in (*ANSWER_ALIASES, *CONTEXT_ALIASES, *PROTECTED):
            data[key] = value
    try:
        completed = RagCase.model_validate(data)
    except ValidationError as exc:
        raise TargetError(validation_message(f"{where}: output", exc)) from None
    missing = missing_fields(completed, metrics, GENERATED_FIELDS)
    if missing:
        raise TargetError(f"{where}: output {describe_missing(missing)}")
    return completed
