"""generate: true — a Python target and a model target produce what the metrics score."""

from __future__ import annotations

import json
import textwrap

import pytest

from . import judge_script as js
from .conftest import JudgeServer, inline_results, write_suite
from .samples import CONTEXT

QUESTIONS = [
    {"id": "q1", "question": "How much Winter Fuel Payment do I get?", "ideal_answer": "£300 if you live alone."},
    {"id": "q2", "question": "When is it paid?", "ideal_answer": "In November or December."},
]

TARGET = textwrap.dedent(
    """
    CONTEXT = {context!r}

    def answer(case):
        if case["question"].startswith("When"):
            return {{"llm_answer": "It is paid in November.", "model": "demo-rag"}}
        return {{"llm_answer": "You get " + case["ideal_answer"], "structured_contexts": [CONTEXT],
                 "model": "demo-rag"}}
    """
)


@pytest.fixture
def python_target(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(answer_target=TARGET.format(context=CONTEXT))


def test_python_target_output_is_scored_saved_and_rescorable(
    pytester: pytest.Pytester, judge_server: JudgeServer, python_target: None
) -> None:
    judge_server.script({("relevance", "When is it paid?"): js.relevance("yes", "no")})
    write_suite(pytester, QUESTIONS, generate=True, target="answer_target:answer",
                metrics=["relevance", "factual_correctness"])
    results = inline_results(pytester.inline_run("-p", "no:cacheprovider"))
    assert results["q1"].status == "passed" and results["q2"].status == "failed"
    assert results["q2"].scores["relevance"] == 0.5
    answers = {js.section(p, "QUESTION"): js.section(p, "ANSWER") for p in judge_server.judge.prompts("relevance")}
    assert answers == {"How much Winter Fuel Payment do I get?": "You get £300 if you live alone.",
                       "When is it paid?": "It is paid in November."}
    assert results["q1"].details["generated"]["structured_contexts"][0]["title"] == CONTEXT["title"]

    generated = pytester.path / ".pytest_evals" / "generated" / "rag.jsonl"
    rows = [json.loads(line) for line in generated.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["q1", "q2"]
    assert rows[0]["llm_answer"] == "You get £300 if you live alone." and rows[0]["model"] == "demo-rag"
    assert rows[1]["question"] == "When is it paid?" and rows[1]["ideal_answer"] == "In November or December."

    # generate: false on the saved file scores the same outputs without running the target again
    sent = judge_server.server.stats()["received"]
    pytester.makepyfile(answer_target="def answer(case):\n    raise RuntimeError('must not run')\n")
    again = inline_results(pytester.inline_run(
        "-p", "no:cacheprovider", "--no-evals-generate", f"--evals-set=input_path={generated}"))
    assert {k: r.scores for k, r in again.items()} == {k: r.scores for k, r in results.items()}
    assert judge_server.server.stats()["received"] == sent  # same requests: all from the cache


def test_target_without_contexts_is_a_target_error_for_metrics_that_need_them(
    pytester: pytest.Pytester, judge_server: JudgeServer, python_target: None
) -> None:
    write_suite(pytester, QUESTIONS, generate=True, target="answer_target:answer",
                metrics=["relevance", "faithfulness"])
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "summary.json")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*rag.jsonl:2: target answer_target:answer: output field "
        "'structured_contexts' (needed by metric faithfulness) is missing or empty",
    ])
    suite = json.loads((pytester.path / "summary.json").read_text())["suites"][0]
    assert suite["cases"]["errors_by_kind"] == {"target": 1}


def test_model_target_with_system_prompt(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    judge_server.judge.target_reply = "You can get £300. It is paid automatically."
    system = "You are a helpful assistant for GOV.UK. Answer in two sentences."
    write_suite(pytester, QUESTIONS[:1], generate=True,
                target={"model": "answer-model", "system_prompt": system},
                metrics=["relevance", "coherence"])
    (r,) = inline_results(pytester.inline_run("-p", "no:cacheprovider")).values()
    assert r.status == "passed", r.message
    target_requests = [q for q in judge_server.judge.requests if q["model"] == "answer-model"]
    assert len(target_requests) == 1
    assert target_requests[0]["messages"] == [
        {"role": "system", "content": system},
        {"role": "user", "content": "How much Winter Fuel Payment do I get?"},
    ]
    for metric in ("relevance", "coherence"):
        (prompt,) = judge_server.judge.prompts(metric)
        assert js.section(prompt, "ANSWER") == "You can get £300. It is paid automatically."
    assert r.details["generated"]["llm_answer"] == "You can get £300. It is paid automatically."
