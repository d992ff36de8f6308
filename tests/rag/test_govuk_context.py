"""GOV.UK-shaped suites: the judge reads each chunk as their code builds it (raw
``html_content``, ``None`` for a null description; issue 28), other suites the rendered text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_evals.families.rag.cases import StructuredContext
from pytest_evals.families.rag.govuk_context import (
    GovukChunk,
    govuk_context_content,
    govuk_flattened,
)

from .conftest import JudgeServer, inline_results, write_suite
from .judge_script import first_user_message, metric_of

#: A chunk as their data has it: entities and tags in the HTML, no description.
CHUNK: dict[str, Any] = {
    "exact_path": "/vat-registration#when-to-register", "base_path": "/vat-registration",
    "title": "VAT registration", "heading_hierarchy": ["When to register", "Thresholds"],
    "description": None,
    "html_content": "<p>You must register if your turnover is over &pound;90,000.</p>\n<ul><li>in 12 months</li></ul>",
}
CASE: dict[str, Any] = {
    "id": "vat", "question": "When must I register for VAT?", "ideal_answer": "When turnover passes £90,000.",
    "llm_answer": "You must register when your turnover is over £90,000 in 12 months.",
    "structured_contexts": [CHUNK, {**CHUNK, "title": "VAT", "heading_hierarchy": [], "description": "Overview",
                                    "html_content": "<p>VAT is a tax.</p>"}],
    "expected_opensearch_index": "chunked_content", "actual_opensearch_index": "chunked_content",
    "model": "model_name",
}
THEIR_FLAT = ("VAT registration\nWhen to register > Thresholds\nNone\n\n"
              "<p>You must register if your turnover is over &pound;90,000.</p>\n<ul><li>in 12 months</li></ul>")
THEIR_LABELLED = ("Context:\nPage Title: VAT registration\nPage description: None\n"
                  "Headings: When to register > Thresholds\n\nContent:\n"
                  "<p>You must register if your turnover is over &pound;90,000.</p>\n<ul><li>in 12 months</li></ul>")


def test_their_two_layouts() -> None:
    # the strings their own tests assert for a chunk with a description
    vat = StructuredContext.model_validate({"title": "VAT", "heading_hierarchy": ["Tax", "VAT"],
                                            "description": "VAT overview", "exact_path": "https://gov.uk/vat",
                                            "html_content": "<p>Some HTML about VAT</p>"})
    assert govuk_flattened(vat) == "VAT\nTax > VAT\nVAT overview\n\n<p>Some HTML about VAT</p>"
    assert govuk_context_content(vat) == ("Context:\nPage Title: VAT\nPage description: VAT overview\n"
                                          "Headings: Tax > VAT\n\nContent:\n<p>Some HTML about VAT</p>")
    chunk = StructuredContext.model_validate(CHUNK)
    assert govuk_flattened(chunk) == THEIR_FLAT
    assert govuk_context_content(chunk) == THEIR_LABELLED
    adapter = GovukChunk(chunk)
    assert adapter.to_flattened_string() == THEIR_FLAT and adapter.base_path == "/vat-registration"
    # no heading path: an empty line, as joining an empty list gives
    empty = StructuredContext.model_validate({**CHUNK, "heading_hierarchy": None})
    assert govuk_flattened(empty).split("\n")[:3] == ["VAT registration", "", "None"]


def _prompts(judge_server: JudgeServer) -> dict[str, str]:
    return {str(metric_of(first_user_message(r))): first_user_message(r) for r in judge_server.judge.requests}


def _their_layout(root: Path) -> None:
    (root / "config" / "defaults").mkdir(parents=True)
    (root / "data").mkdir()
    config = {"what": "Evaluating RAG answers", "generate": False, "input_path": "data/rag_answers.jsonl",
              "claude_generation_model": None, "n_runs": 1, "deepeval_metrics": "never",
              "metrics": [{"name": n, "threshold": 0.8, "model": "openai.gpt-oss-120b-1:0", "temperature": 0.0}
                          for n in ("faithfulness", "context_relevancy")]}
    (root / "config" / "defaults" / "rag_answers.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (root / "data" / "rag_answers.jsonl").write_text(json.dumps(CASE) + "\n", encoding="utf-8")


def test_govuk_shaped_suite_sends_their_context_text(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    _their_layout(pytester.path)
    result = inline_results(pytester.inline_run("config/defaults/", "--evals-suite-pattern", "*.yaml",
                                                "-p", "no:cacheprovider"))["vat"]
    prompts = _prompts(judge_server)
    assert f"[Context 1]\n{THEIR_FLAT}\n\n[Context 2]\nVAT\n\nOverview\n\n<p>VAT is a tax.</p>" in prompts["faithfulness"]
    assert f"[Context 1]\n{THEIR_LABELLED}\n\n[Context 2]\nContext:\nPage Title: VAT" in prompts["context_relevancy"]
    # the reviewer sees what the judge read, and the rendered text beside it
    assert result.details["judge_contexts"][0] == THEIR_FLAT
    assert "&pound;" not in result.details["contexts"][0]


def test_own_suite_sends_rendered_text(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    write_suite(pytester, [CASE], metrics=["faithfulness"])
    inline_results(pytester.inline_run("-p", "no:cacheprovider"))
    prompt = _prompts(judge_server)["faithfulness"]
    assert "£90,000" in prompt and "&pound;" not in prompt and "<p>" not in prompt and "None" not in prompt


def test_govuk_true_on_an_own_suite_file(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    write_suite(pytester, [CASE], metrics=["faithfulness"], govuk=True, deepeval_metrics="never")
    inline_results(pytester.inline_run("-p", "no:cacheprovider"))
    assert THEIR_FLAT in _prompts(judge_server)["faithfulness"]
