"""``truncate:`` in a rag_answers suite: a judged metric's prompt longer than the model's
context is sent with its retrieved context cut (``longest``), not sent (``skip``), or
sent as it is and refused (``none``, a context_length ERROR); recorded per case."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_evals.llm.truncation import LEARNED

from . import judge_script as js
from .conftest import JudgeServer, inline_results, write_suite
from .samples import CASE

#: A retrieved page far longer than the fake model's context (2048 tokens).
LONG_CASE: dict[str, Any] = {
    "id": "long",
    "question": "What does the long guide say about deadlines?",
    "ideal_answer": "Apply by the end of March.",
    "llm_answer": "Apply by the end of March.",
    "structured_contexts": [{
        "exact_path": "/long-guide", "title": "Long guide", "heading_hierarchy": None,
        "description": "Everything.",
        "html_content": "<p>" + "The deadline is the end of March. " * 600 + "</p>",
    }],
}
METRICS = ["faithfulness", "relevance"]


@pytest.fixture(autouse=True)
def _forget_learned_limits() -> None:
    # A limit learned from one test's server must not fit another test's prompts.
    LEARNED._limits.clear()


def _run(pytester: pytest.Pytester, server: JudgeServer, policy: str) -> dict[str, Any]:
    server.server.configure(max_context=2048)
    server.script({
        ("faithfulness", LONG_CASE["question"]): js.faithfulness("yes"),
        ("faithfulness", CASE["question"]): js.faithfulness("yes"),
        ("relevance", LONG_CASE["question"]): js.relevance("yes"),
        ("relevance", CASE["question"]): js.relevance("yes"),
    })
    write_suite(pytester, [CASE, LONG_CASE], metrics=METRICS, truncate=policy)
    return inline_results(pytester.inline_run("-p", "no:cacheprovider"))


def test_longest_cuts_the_retrieved_context_only_and_records_it(
    pytester: pytest.Pytester, judge_server: JudgeServer
) -> None:
    results = _run(pytester, judge_server, "longest")
    long = results["long"]
    assert long.status == "passed", long.message
    record = long.data["truncation"]
    assert set(record) == {"faithfulness"}  # relevance's prompt has no context: it fits
    assert record["faithfulness"]["policy"] == "longest"
    assert record["faithfulness"]["field"] == "context"
    assert record["faithfulness"]["context_limit"] == 2048  # named by the server's refusal
    assert record["faithfulness"]["kept_chars"] < record["faithfulness"]["original_chars"]
    assert "truncation" not in results["wfp"].data
    sent = [p for p in judge_server.judge.prompts("faithfulness") if LONG_CASE["question"] in p]
    fitted = [p for p in sent if "characters cut to fit the model's context" in p]
    assert fitted, "the fitted prompt never reached the server"
    # The judged answer and question are never cut.
    assert all(LONG_CASE["llm_answer"] in p and LONG_CASE["question"] in p for p in fitted)
    assert all(len(p) < 2048 * 4 for p in fitted)


def test_skip_records_the_case_as_skipped_and_sends_nothing_for_it(
    pytester: pytest.Pytester, judge_server: JudgeServer
) -> None:
    judge_server.server.configure(max_context=2048)
    write_suite(pytester, [CASE, LONG_CASE], metrics=METRICS, truncate="skip", context_tokens=2048)
    reprec = pytester.inline_run("-p", "no:cacheprovider")
    reprec.assertoutcome(passed=1, skipped=1)
    skipped = reprec.getreports("pytest_runtest_logreport")
    text = " ".join(str(r.longrepr) for r in skipped if r.skipped)
    assert "faithfulness judge prompt not sent (truncate: skip)" in text
    assert all(LONG_CASE["question"] not in p for p in judge_server.judge.prompts("faithfulness"))


def test_none_sends_it_and_the_refusal_is_a_context_length_error(
    pytester: pytest.Pytester, judge_server: JudgeServer
) -> None:
    results = _run(pytester, judge_server, "none")
    assert results["wfp"].status == "passed"
    long = results["long"]
    assert long.status == "error"
    assert "maximum context length is 2048 tokens" in (long.message or "")
    assert "truncation" not in long.data


def test_an_unknown_policy_is_refused_naming_the_field(
    pytester: pytest.Pytester, judge_server: JudgeServer
) -> None:
    write_suite(pytester, [CASE], truncate="middle")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*truncate*"])


def test_longest_under_xdist(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    judge_server.server.configure(max_context=2048)
    write_suite(pytester, [CASE, LONG_CASE], metrics=METRICS, truncate="longest")
    result = pytester.runpytest("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=2)
    fitted = [p for p in judge_server.judge.prompts("faithfulness")
              if "characters cut to fit the model's context" in p]
    assert fitted and all(LONG_CASE["llm_answer"] in p for p in fitted)
