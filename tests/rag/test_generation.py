from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from pytest_evals.families.rag.cases import RagCase
from pytest_evals.families.rag.generation import merge_output
from pytest_evals.model.errors import TargetError

from .samples import CONTEXT

EVAL_SUITES = Path(__file__).resolve().parents[2] / "eval_suites"
BASE = RagCase(question="How much?", ideal_answer="£300.")
ALL = ["relevance", "faithfulness", "context_relevancy", "coherence", "factual_correctness"]


def test_target_output_completes_the_case() -> None:
    out = merge_output(BASE, {"llm_answer": "£300.", "structured_contexts": [CONTEXT], "model": "m1",
                              "question": "rewritten?"}, "t", ALL)
    assert out.llm_answer == "£300." and out.structured_contexts is not None
    assert out.structured_contexts[0].title == CONTEXT["title"]
    # extra outputs are kept for generated.jsonl; the question and ideal answer are not rewritten
    dumped = out.model_dump(mode="json")
    assert dumped["model"] == "m1" and out.question == "How much?" and out.ideal_answer == "£300."


@pytest.mark.parametrize("output", [{"text": "£300."}, {"answer": "£300."}, "£300."])
def test_answer_aliases_and_case_contexts_kept(output: object) -> None:
    base = BASE.model_copy(update={"structured_contexts": RagCase.model_validate(
        {"question": "q", "structured_contexts": [CONTEXT]}).structured_contexts})
    out = merge_output(base, output, "t", ALL)
    assert out.llm_answer == "£300." and out.structured_contexts is not None and len(out.structured_contexts) == 1


def test_missing_generated_field_is_a_target_error_naming_field_and_metric() -> None:
    with pytest.raises(TargetError, match=r"^case.jsonl:1: target x: output field 'structured_contexts' "
                                          r"\(needed by metric faithfulness, context_relevancy\) is missing"):
        merge_output(BASE, {"text": "£300."}, "case.jsonl:1: target x", ALL)
    # metrics that do not read contexts are fine without them
    assert merge_output(BASE, {"text": "£300."}, "t", ["relevance"]).llm_answer == "£300."


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ([1, 2], "expected a JSON object with 'llm_answer', got list"),
        ({"llm_answer": "a", "structured_contexts": [{"title": "t"}]}, "field 'structured_contexts.0.exact_path'"),
        ({"llm_answer": "", "structured_contexts": []}, "field 'llm_answer' (needed by metric relevance"),
    ],
)
def test_unusable_output(output: object, expected: str) -> None:
    with pytest.raises(TargetError) as info:
        merge_output(BASE, output, "t", ALL)
    assert expected in str(info.value)


@pytest.fixture(scope="module")
def rag_target() -> ModuleType:
    """The example target loaded from its file under a private name (no ``targets`` package
    left behind in ``sys.modules`` for other tests to trip over)."""
    path = EVAL_SUITES / "targets" / "rag_target.py"
    spec = importlib.util.spec_from_file_location("_rag_example_target", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_target_is_deterministic_and_returns_seed_fields(rag_target: ModuleType) -> None:
    lines = (EVAL_SUITES / "data" / "rag_answers_questions.jsonl").read_text(encoding="utf-8").splitlines()
    for line in lines:
        case = json.loads(line)
        first, second = rag_target.answer(case), rag_target.answer(dict(case))
        assert first == second
        completed = merge_output(RagCase.model_validate(case), first, "t", ALL)
        assert completed.llm_answer and completed.structured_contexts
    out = rag_target.answer({"question": "How much does it cost to renew my passport online?"})
    assert out["structured_contexts"][0]["exact_path"] == "/renew-adult-passport#renew-online"
    assert "£88.50" in out["llm_answer"]
    nothing = rag_target.answer({"question": "zebra quantum"})
    assert nothing == {"llm_answer": rag_target.NOT_FOUND, "structured_contexts": []}
