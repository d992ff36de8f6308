"""``judge:`` blocks: the judge in the suite author's words, through the real client against
the loopback server (issue 26). The server records every prompt; a rerun is served by the cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_evals.families.rag.judge_block import (
    GENERIC_PERSONA,
    JudgeBlock,
    merge_blocks,
    resolve_judge,
)
from pytest_evals.families.rag.prompts import JUDGE_SYSTEM
from pytest_evals.model.errors import SuiteConfigError

from . import judge_script as js
from .conftest import JudgeServer, inline_results, write_suite

DOMAIN = "a customer-support assistant for Acme's billing product"
CRITERIA = ["Quoting a price that the context does not give is unfaithful.",
            "A suggestion to upgrade to Acme Premium is off topic unless the customer asked."]
EXAMPLE = {"input": "Q: Can I pay by cheque? A: Yes, any time.",
           "output": "The claim 'any time' is idk: the help page gives no hours."}
ACME: dict[str, Any] = {
    "id": "refund",
    "question": "How long does an Acme refund take?",
    "ideal_answer": "Refunds reach your card within 10 working days.",
    "llm_answer": "Refunds reach your card within 10 working days. Consider Acme Premium for faster refunds.",
    "structured_contexts": [{
        "exact_path": "/help/refunds", "title": "Refunds", "heading_hierarchy": ["Billing", "Refunds"],
        "description": None, "html_content": "<p>Refunds reach your card within 10 working days.</p>",
    }],
}
GOVERNMENT_WORDS = ("government", "gov.uk", "public-service", "public service")


def _systems(judge_server: JudgeServer) -> list[str]:
    return [m["content"] for r in judge_server.judge.requests for m in r["messages"] if m["role"] == "system"]


def test_domain_criteria_and_examples_reach_the_judge_and_no_government_wording(
        pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    judge_server.script({("relevance", ACME["question"]): [js.relevance("yes", "no"), js.relevance("yes", "yes"),
                                                            js.relevance("yes", "yes")]})
    metrics = ["faithfulness", "context_relevancy", "coherence", "factual_precision", "bias",
               {"name": "relevance", "threshold": 0.8, "judge": {"n_runs": 3, "combine": "majority"}}]
    write_suite(pytester, [ACME], metrics=metrics,
                judge={"domain": DOMAIN, "criteria": CRITERIA, "examples": [EXAMPLE], "temperature": 0.3})
    result = inline_results(pytester.inline_run("-p", "no:cacheprovider"))["refund"]
    requests = judge_server.judge.requests
    # faithfulness, context_relevancy, coherence, facts, bias once; relevance three times
    assert len(requests) == 8
    for request in requests:
        system = next(m["content"] for m in request["messages"] if m["role"] == "system")
        assert system.startswith(f"You are a meticulous evaluator of answers given by {DOMAIN}.")
        assert all(c in system for c in CRITERIA)
        assert EXAMPLE["input"] in system and EXAMPLE["output"] in system
        assert request["temperature"] == 0.3
        everything = json.dumps(request["messages"]).lower()
        assert not any(word in everything for word in GOVERNMENT_WORDS), everything
    # majority: 2 of 3 runs reach 0.8 (0.5, 1.0, 1.0); the mean 0.833 is recorded beside it.
    # The three runs go out at once and the scripted judge answers in arrival order, so
    # which run got the 0.5 is the network's choice: compare them as a multiset.
    entry = result.data["metrics"]["relevance"]
    assert sorted(entry["runs"]) == [0.5, 1.0, 1.0] and entry["combine"] == "majority"
    assert entry["runs_passed"] == 2 and entry["majority_passed"] is True and entry["passed"] is True
    assert result.details["judge_personas"]["relevance"] == "domain"
    # a rerun is served from the cache: not one request more
    before = len(requests)
    again = inline_results(pytester.inline_run("-p", "no:cacheprovider"))["refund"]
    assert len(judge_server.judge.requests) == before
    assert again.scores == result.scores


def test_an_own_suite_without_judge_block_gets_neutral_wording(
        pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    write_suite(pytester, [ACME], metrics=["relevance", "faithfulness"])
    result = inline_results(pytester.inline_run("-p", "no:cacheprovider"))["refund"]
    assert result.status == "passed", result.message
    systems = _systems(judge_server)
    assert len(systems) == 2 and all(s.startswith(GENERIC_PERSONA) for s in systems)
    assert not any(w in s.lower() for s in systems for w in GOVERNMENT_WORDS)


def _govuk_layout(root: Path, **extra: Any) -> None:
    (root / "config" / "defaults").mkdir(parents=True)
    (root / "data").mkdir()
    config = {"what": "Evaluating RAG answers", "generate": False, "input_path": "data/rag_answers.jsonl",
              "claude_generation_model": None,
              "metrics": [{"name": "faithfulness", "threshold": 1.0, "model": "openai.gpt-oss-120b-1:0",
                           "temperature": 0.0}], "n_runs": 1,
              # our prompts (not DeepEval's, whether or not it is installed)
              "deepeval_metrics": "never", **extra}
    (root / "config" / "defaults" / "rag_answers.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    # a row their EvaluationTestCase accepts (their layout: their data rules apply)
    chunks = [{**c, "base_path": "/help"} for c in ACME["structured_contexts"]]
    row = {**ACME, "structured_contexts": chunks, "model": "acme-bot", "actual_opensearch_index": "help"}
    (root / "data" / "rag_answers.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")


def test_govuk_shaped_suite_keeps_their_government_wording(
        pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    _govuk_layout(pytester.path)
    inline_results(pytester.inline_run("config/defaults/", "--evals-suite-pattern", "*.yaml",
                                       "-p", "no:cacheprovider"))
    systems = _systems(judge_server)
    assert systems == [JUDGE_SYSTEM]
    assert judge_server.judge.requests[0]["model"] == "openai.gpt-oss-120b-1:0"


def test_govuk_shaped_suite_with_its_own_domain(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    _govuk_layout(pytester.path, judge={"domain": DOMAIN})
    inline_results(pytester.inline_run("config/defaults/", "--evals-suite-pattern", "*.yaml",
                                       "-p", "no:cacheprovider"))
    (system,) = _systems(judge_server)
    assert DOMAIN in system and "government" not in system.lower()


def test_a_metrics_block_overrides_the_suites_field_by_field() -> None:
    suite = JudgeBlock(system_prompt="Judge as Acme's QA lead.", criteria=["Be strict."], temperature=0.2)
    own = JudgeBlock(model="gpt-4o")  # GOV.UK's metric-level `model`
    metric = JudgeBlock(domain=DOMAIN, n_runs=2)
    resolved = resolve_judge([suite, own, metric], n_runs=1, govuk_persona=JUDGE_SYSTEM)
    assert resolved.model == "gpt-4o" and resolved.temperature == 0.2 and resolved.n_runs == 2
    # a metric's domain replaces the suite's system prompt instead of clashing with it
    assert resolved.persona == "domain" and "Acme's QA lead" not in resolved.system
    assert "Be strict." in resolved.system_message()
    assert merge_blocks([suite, None]).system_prompt == "Judge as Acme's QA lead."
    assert resolve_judge([None], n_runs=3, govuk_persona=None).system.startswith(GENERIC_PERSONA)
    assert resolve_judge([None], n_runs=3, govuk_persona=JUDGE_SYSTEM).system == JUDGE_SYSTEM


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"judge": {"domain": "x", "system_prompt": "y"}}, "either 'system_prompt'"),
        ({"judge": {"criteria": ["fine", "  "]}}, "criterion 1 is empty"),
        ({"judge": {"n_runs": 0}}, "judge.n_runs"),
        ({"judge": {"n_runs": 2.0}}, "judge.n_runs"),
        ({"metrics": [{"name": "relevance", "model": " "}]}, "metrics.0.model"),
        ({"judge": {"model": ""}}, "judge.model"),
        ({"judge": {"temperature": "0.3"}}, "judge.temperature"),
        ({"judge": {"criteria": [3]}}, "judge.criteria.0"),
        ({"judge": {"combine": "median"}}, "judge.combine"),
        ({"judge": {"examples": [{"input": "q"}]}}, "judge.examples.0.output"),
        ({"judge": {"domian": "x"}}, "judge.domian"),
        ({"metrics": [{"name": "relevance", "model": "a", "judge": {"model": "b"}}]}, "give 'model' once"),
        ({"metrics": [{"name": "errors", "deepeval": "deepeval.metrics:BiasMetric", "threshold": 0.0}]},
         "it is a gate path"),
        ({"metrics": [{"name": "my.metric", "deepeval": "m:C", "threshold": 0.5}]}, "it is a gate path"),
        ({"metrics": [{"name": "mine", "deepeval": "m:C"}]}, "give it a 'threshold'"),
        ({"metrics": [{"name": "mine", "deepeval": "not a path", "threshold": 0.5}]}, "package.module:ClassName"),
        ({"metrics": [{"name": "relevance", "lower_is_better": True}]}, "ours know their direction"),
        ({"metrics": [{"name": "relevance", "options": {"x": 1}}]}, "this metric has none"),
    ],
)
def test_bad_judge_blocks_are_suite_errors(make_task: Any, fields: dict[str, Any], expected: str) -> None:
    with pytest.raises(SuiteConfigError, match=expected):
        make_task(**fields)
