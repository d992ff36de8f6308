from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_evals.families.rag.cases import METRIC_FIELDS, METRIC_NAMES
from pytest_evals.families.rag.task import RagAnswers
from pytest_evals.model.errors import CaseInputError, SuiteConfigError

from .samples import CASE, CONTEXT


def load_all(task: RagAnswers) -> list[Any]:
    out: list[Any] = []
    for ref in task.case_refs():
        try:
            out.append(task.load_case(ref))
        except CaseInputError as exc:
            out.append(exc)
    return out


def test_seed_fields_load_and_extra_fields_are_kept(make_task: Callable[..., RagAnswers]) -> None:
    case = {**CASE, "base_path": "/winter-fuel-payment", "model": "gpt-x",
            "structured_contexts": [{**CONTEXT, "score": 0.8}]}
    (loaded,) = load_all(make_task([case], metrics=list(METRIC_NAMES)))
    assert loaded.question == CASE["question"]
    assert loaded.structured_contexts[0].heading_hierarchy == ["What you'll get", "How much"]
    assert loaded.model_dump()["base_path"] == "/winter-fuel-payment"
    assert loaded.structured_contexts[0].model_dump()["score"] == 0.8


def test_null_heading_hierarchy_is_allowed(make_task: Callable[..., RagAnswers]) -> None:
    case = {**CASE, "structured_contexts": [{**CONTEXT, "heading_hierarchy": None}]}
    (loaded,) = load_all(make_task([case], metrics=["faithfulness"]))
    assert loaded.structured_contexts[0].heading_hierarchy is None


@pytest.mark.parametrize(
    ("metric", "drop", "field"),
    [
        ("factual_correctness", "ideal_answer", "ideal_answer"),
        ("factual_recall", "ideal_answer", "ideal_answer"),
        ("relevance", "llm_answer", "llm_answer"),
        ("coherence", "llm_answer", "llm_answer"),
        ("faithfulness", "structured_contexts", "structured_contexts"),
        ("context_relevancy", "structured_contexts", "structured_contexts"),
    ],
)
def test_missing_field_names_field_and_metric(
    make_task: Callable[..., RagAnswers], metric: str, drop: str, field: str
) -> None:
    case = {k: v for k, v in CASE.items() if k != drop}
    (err,) = load_all(make_task([case], metrics=[metric]))
    assert isinstance(err, CaseInputError)
    assert str(err).endswith(f"cases.jsonl:1: field {field!r} (needed by metric {metric}) is missing or empty")


def test_fields_a_metric_does_not_need_may_be_missing(make_task: Callable[..., RagAnswers]) -> None:
    case = {"question": "Q?", "llm_answer": "A."}
    (loaded,) = load_all(make_task([case], metrics=["relevance", "coherence"]))
    assert loaded.llm_answer == "A."


def test_blank_text_counts_as_missing_and_all_metrics_are_named(make_task: Callable[..., RagAnswers]) -> None:
    case = {**CASE, "ideal_answer": "   "}
    (err,) = load_all(make_task([case], metrics=["relevance", "factual_correctness", "factual_recall"]))
    assert "field 'ideal_answer' (needed by metric factual_correctness, factual_recall)" in str(err)


def test_empty_context_list_is_a_real_retrieval(make_task: Callable[..., RagAnswers]) -> None:
    (loaded,) = load_all(make_task([{**CASE, "structured_contexts": []}], metrics=["faithfulness"]))
    assert loaded.structured_contexts == []


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ({**CASE, "question": ""}, "field 'question': Value error, must not be empty"),
        ({k: v for k, v in CASE.items() if k != "question"}, "field 'question': Field required"),
        ({**CASE, "structured_contexts": [{**CONTEXT, "title": None}]}, "field 'structured_contexts.0.title'"),
        ({**CASE, "structured_contexts": [{k: v for k, v in CONTEXT.items() if k != "html_content"}]},
         "field 'structured_contexts.0.html_content': Field required"),
        ({**CASE, "structured_contexts": [{**CONTEXT, "heading_hierarchy": "A > B"}]},
         "field 'structured_contexts.0.heading_hierarchy'"),
        ({**CASE, "llm_answer": 42}, "field 'llm_answer'"),
        (["not", "an", "object"], "a case must be a JSON object"),
    ],
)
def test_bad_cases_name_file_line_and_field(
    make_task: Callable[..., RagAnswers], case: Any, expected: str
) -> None:
    (err,) = load_all(make_task([CASE, case][1:], metrics=["relevance"]))
    assert isinstance(err, CaseInputError)
    assert "cases.jsonl:1: " in str(err) and expected in str(err)


def test_one_bad_line_does_not_hide_the_others(make_task: Callable[..., RagAnswers]) -> None:
    cases = [CASE, {**CASE, "id": "b", "llm_answer": None}, {**CASE, "id": "c"}]
    loaded = load_all(make_task(cases, metrics=["relevance"]))
    assert [type(x).__name__ for x in loaded] == ["RagCase", "CaseInputError", "RagCase"]
    assert "cases.jsonl:2:" in str(loaded[1])


def test_generate_needs_only_question_and_what_metrics_read_from_it(make_task: Callable[..., RagAnswers]) -> None:
    task = make_task([{"question": "Q?"}, {"question": "Q2?", "ideal_answer": "I."}],
                     metrics=["faithfulness", "factual_correctness"], generate=True,
                     target="targets.rag_target:answer")
    first, second = load_all(task)
    assert isinstance(first, CaseInputError)
    assert "field 'ideal_answer' (needed by metric factual_correctness)" in str(first)
    assert "llm_answer" not in str(first)
    assert second.question == "Q2?" and second.llm_answer is None


def test_every_metric_declares_what_it_reads() -> None:
    assert set(METRIC_FIELDS) == set(METRIC_NAMES)
    assert all("question" in f for f in METRIC_FIELDS.values())


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"metrics": ["faithfulnes"]}, "metrics.0.name"),
        ({"metrics": [{"name": "relevance", "treshold": 0.8}]}, "metrics.0.treshold"),
        ({"metrics": [{"name": "relevance", "threshold": 1.5}]}, "metrics.0.threshold"),
        ({"metrics": ["relevance", "relevance"]}, "listed twice"),
        ({"metrics": []}, "metrics"),
        ({"n_runs": 0}, "n_runs"),
    ],
)
def test_bad_metric_config_is_a_suite_error(
    make_task: Callable[..., RagAnswers], fields: dict[str, Any], expected: str
) -> None:
    with pytest.raises(SuiteConfigError, match=expected):
        make_task(**fields)


def test_default_thresholds_are_govuk_settings(make_task: Callable[..., RagAnswers]) -> None:
    task = make_task(metrics=["faithfulness", "relevance", "factual_correctness", "context_relevancy",
                              "coherence", {"name": "factual_recall", "threshold": 0.5}])
    assert [m.effective_threshold for m in task.rag_config.metrics] == [1.0, 0.8, 1.0, 0.8, 0.8, 0.5]
