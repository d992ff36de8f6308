"""Judged assertions and custom metrics against the loopback OpenAI-compatible judge:
the judge sees your criteria, answers are cached (a rerun makes no request), G-Eval is
probability-weighted when log-probabilities come back, custom metrics feed regression
gates, and with no endpoint a judged assertion is an honest ERROR."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_evals.testing.fake_openai import last_user_message

from .conftest import JudgeServer, read_json, suite_summary, write_suite

CASES = [
    {"id": "q1", "question": "Can I return shoes?", "output": "Thank you for asking! Yes, within 30 days.",
     "reference": "Shoes can be returned within 30 days."},
    {"id": "q2", "question": "Where is my parcel?", "output": "Look it up yourself.",
     "reference": "Use the tracking link in your shipping email."},
]

RUBRIC = "The answer is polite to the customer and thanks them where it fits."


def scripted(body: dict[str, Any]) -> str:
    """Judge replies that depend on the answer judged (so a changed answer changes them)."""
    prompt = last_user_message(body)
    rude = "yourself" in prompt  # only the rude answers say it
    if '"verdict"' in prompt:
        return json.dumps({"reason": "compared", "verdict": "disagrees" if rude else "subset"})
    if "whole number" in prompt:
        return json.dumps({"score": 2 if rude else 5, "reason": "rated"})
    return json.dumps({"score": 0.1 if rude else 0.9, "reason": "graded: rude" if rude else "graded: polite"})


def test_the_judge_sees_your_criteria_and_a_rerun_is_cached(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    judge_server.reply = scripted
    judge = {"system_prompt": "You review answers of ShopCo's support bot.", "criteria": "Never mention competitors.",
             "examples": [{"output": "Thanks for waiting!", "score": 1, "reason": "warm"}], "temperature": 0}
    write_suite(
        pytester.path, CASES,
        asserts=[{"type": "llm_rubric", "criteria": RUBRIC, "judge": judge},
                 {"type": "factuality", "scores": {"subset": 0.7}},
                 {"type": "answer_relevance", "threshold": 0.5}],
        metrics=[{"name": "warmth", "criteria": "How warm the answer sounds.", "scale": [1, 5], "threshold": 3,
                  "steps": ["Read the answer.", "Rate its warmth."]}],
        thresholds={"warmth": {"mean": {"min": 3}}, "per_assertion": {"factuality": {"mean": {"min": 0.3}}}},
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    first = len(judge_server.requests)
    assert first == 2 * 4  # four judged assertions, two cases
    prompts = judge_server.prompts()
    rubric = [p for p in prompts if RUBRIC in p]
    assert len(rubric) == 2 and all("Never mention competitors." in p and "Thanks for waiting!" in p for p in rubric)
    systems = {b["messages"][0]["content"] for b in judge_server.requests if RUBRIC in last_user_message(b)}
    assert systems == {"You review answers of ShopCo's support bot."}
    warmth = [p for p in prompts if "How warm the answer sounds." in p]
    assert len(warmth) == 2 and all("1. Read the answer.\n2. Rate its warmth." in p for p in warmth)
    assert all("Shoes can be returned within 30 days." in p for p in prompts if '"verdict"' in p and "return shoes" in p)
    summary = read_json(pytester.path / "s.json")
    schema = json.loads((Path(__file__).parents[1] / "core" / "summary.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(summary)  # custom metrics keep the published shape
    suite = suite_summary(summary)
    m = suite["metrics"]
    # Values computed from the scripted replies: q1 polite, q2 rude.
    assert m["per_assertion"]["llm_rubric"]["mean"]["value"] == pytest.approx((0.9 + 0.1) / 2)
    assert m["per_assertion"]["factuality"]["mean"]["value"] == pytest.approx((0.7 + 0.0) / 2)
    assert m["warmth"]["mean"]["value"] == pytest.approx((5 + 2) / 2)
    assert m["warmth"]["pass_rate"]["value"] == pytest.approx(0.5)
    assert m["pass_rate"]["value"] == pytest.approx(0.5)
    statuses = {r["case_id"]: r["status"] for r in suite["case_results"]}
    assert statuses == {"q1": "passed", "q2": "failed"}
    assert result.ret == 0  # warmth.mean 3.5 >= 3 and factuality 0.35 >= 0.3
    # Rerun: every answer from the cache, not one request.
    rerun = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s2.json")
    assert len(judge_server.requests) == first
    again = suite_summary(read_json(pytester.path / "s2.json"))
    assert again["metrics"]["warmth"] == m["warmth"] and rerun.ret == 0
    assert not re.search(r"jailbreak|GOV\.UK|government", result.stdout.str() + rerun.stdout.str(), re.IGNORECASE)


def _logprob_reply(score: int, probs: dict[int, float]) -> dict[str, Any]:
    text = json.dumps({"score": score, "reason": "weighted"})
    tokens = ['{"', "score", '":', " ", str(score), ',"', "reason", '":"', "weighted", '"}']
    content = []
    for tok in tokens:
        entry: dict[str, Any] = {"token": tok, "logprob": 0.0, "top_logprobs": [{"token": tok, "logprob": 0.0}]}
        if tok == str(score):
            entry["logprob"] = math.log(probs[score])
            entry["top_logprobs"] = [{"token": str(k), "logprob": math.log(p)} for k, p in probs.items()]
            entry["top_logprobs"].append({"token": "hello", "logprob": math.log(0.05)})
        content.append(entry)
    return {"content": text, "logprobs": {"content": content}}


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_g_eval_is_probability_weighted_when_logprobs_come_back(
    pytester: pytest.Pytester, judge_server: JudgeServer, workers: list[str]
) -> None:
    probs = {4: 0.6, 5: 0.25, 3: 0.1}
    judge_server.reply = lambda body: _logprob_reply(4, probs)
    write_suite(pytester.path, CASES, metrics=[{"name": "clarity", "criteria": "Clear wording.", "scale": [1, 5]}])
    pytester.runpytest_subprocess(*workers, "-p", "no:cacheprovider", "--evals-json", "s.json")
    assert all(b.get("logprobs") is True and b.get("top_logprobs") == 20 for b in judge_server.requests)
    suite = suite_summary(read_json(pytester.path / "s.json"))
    expected = sum(k * p for k, p in probs.items()) / sum(probs.values())
    assert suite["metrics"]["clarity"]["mean"]["value"] == pytest.approx(expected)
    modes = {r["case_id"]: r["data"]["assertions"]["clarity"]["mode"] for r in suite["case_results"]}
    assert modes == {"q1": "probability-weighted", "q2": "probability-weighted"}
    assert not suite["warnings"]


def test_g_eval_without_logprobs_is_plain_and_says_so(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    judge_server.reply = lambda body: json.dumps({"score": 4, "reason": "fine"})
    write_suite(pytester.path, CASES, metrics=[{"name": "clarity", "criteria": "Clear wording.", "scale": [1, 5]}])
    pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    suite = suite_summary(read_json(pytester.path / "s.json"))
    assert suite["metrics"]["clarity"]["mean"]["value"] == pytest.approx(4.0)
    assert {r["data"]["assertions"]["clarity"]["mode"] for r in suite["case_results"]} == {"plain"}
    assert any("scored plain" in w for w in suite["warnings"])
    assert all(b.get("logprobs") is True for b in judge_server.requests)


def test_g_eval_logprobs_false_does_not_ask_for_them(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    judge_server.reply = lambda body: _logprob_reply(4, {4: 0.5, 5: 0.5})
    write_suite(pytester.path, CASES[:1], metrics=[{"name": "clarity", "criteria": "Clear wording.", "logprobs": False,
                                                     "scale": [1, 5], "judge": {"n_runs": 3, "temperature": 1}}])
    pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    assert len(judge_server.requests) == 3  # three independent runs
    assert not any("logprobs" in b or "top_logprobs" in b for b in judge_server.requests)
    suite = suite_summary(read_json(pytester.path / "s.json"))
    assert suite["metrics"]["clarity"]["mean"]["value"] == pytest.approx(4.0)
    assert suite["case_results"][0]["data"]["assertions"]["clarity"]["mode"] == "plain"


def test_an_unusable_judge_reply_is_the_case_error_with_the_reply(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    judge_server.reply = lambda body: "I would rather not say."
    write_suite(pytester.path, CASES[:1], asserts=[{"type": "llm_rubric", "criteria": RUBRIC}])
    pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    [res] = suite_summary(read_json(pytester.path / "s.json"))["case_results"]
    assert res["status"] == "error" and "judge reply is not a JSON object" in res["message"]


def test_offline_a_judged_assertion_is_an_error_never_a_pass(pytester: pytest.Pytester) -> None:
    write_suite(pytester.path, CASES, name="judged",
                asserts=[{"type": "contains", "value": "30"}, {"type": "llm_rubric", "criteria": RUBRIC}])
    write_suite(pytester.path, CASES, name="plain", asserts=[{"type": "icontains", "value": "o"}])
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    summary = read_json(pytester.path / "s.json")
    judged = suite_summary(summary, "judged")
    assert [r["status"] for r in judged["case_results"]] == ["error", "error"]
    assert all("needs a model endpoint" in r["message"] and "answers" not in r["message"] for r in judged["case_results"])
    assert judged["passed"] is False and judged["cases"]["errors_by_kind"] == {"infrastructure": 2}
    assert suite_summary(summary, "plain")["passed"] is True
    assert result.ret == 1


def _regression_run(pytester: pytest.Pytester, workers: list[str], rude: set[int], *args: str) -> pytest.RunResult:
    cases = [{"id": f"c{i:02d}", "question": f"question {i}",
              "output": "Find it yourself." if i in rude else f"Happy to help with {i}!"} for i in range(30)]
    write_suite(pytester.path, cases,
                metrics=[{"name": "politeness", "criteria": "Polite to the customer.", "scale": [1, 5], "threshold": 3}],
                thresholds={"politeness": {"mean": {"max_drop": 0.2}, "pass_rate": {"max_drop": 0.1}}})
    return pytester.runpytest_subprocess(*workers, "-p", "no:cacheprovider", *args)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_a_custom_metric_feeds_regression_gates(
    pytester: pytest.Pytester, judge_server: JudgeServer, workers: list[str]
) -> None:
    judge_server.reply = scripted
    base = _regression_run(pytester, workers, set(), "--evals-json", "base.json")
    assert base.ret == 0
    baseline = suite_summary(read_json(pytester.path / "base.json"))
    assert baseline["metrics"]["politeness"]["mean"]["value"] == pytest.approx(5.0)
    # Ten answers turn rude: politeness falls from 5 to 4 on average, 10 of 30 cases fail.
    worse = _regression_run(pytester, workers, set(range(0, 30, 3)), "--evals-json", "cur.json",
                            "--evals-baseline", "base.json")
    current = suite_summary(read_json(pytester.path / "cur.json"))
    assert current["metrics"]["politeness"]["mean"]["value"] == pytest.approx((20 * 5 + 10 * 2) / 30)
    assert current["passed"] is False and worse.ret == 1
    out = worse.stdout.str()
    assert re.search(r"REGRESSION politeness\.mean max drop 0\.2", out), out
    assert re.search(r"REGRESSION politeness\.pass_rate max drop 0\.1", out), out


def test_batch_mode_asks_the_same_questions_in_one_batch(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    probs = {5: 0.7, 4: 0.3}
    judge_server.reply = lambda body: (_logprob_reply(5, probs) if "whole number" in last_user_message(body)
                                       else scripted(body))
    write_suite(pytester.path, CASES, asserts=[{"type": "llm_rubric", "criteria": RUBRIC}],
                metrics=[{"name": "clarity", "criteria": "Clear wording.", "scale": [1, 5]}])
    common = ["-p", "no:cacheprovider", "--evals-batch-poll", "0.02"]
    pytester.runpytest(*common, "--evals-json", "live.json", "--evals-cache-dir", str(pytester.path / "c1"))
    server = judge_server.server
    server.reset()
    # its own process: a second in-process run here once met CPython 3.11's "AST constructor
    # recursion depth mismatch" in pytest's assertion rewriter (an interpreter state, not ours)
    pytester.runpytest_subprocess(*common, "--evals-batch", "--evals-json", "batch.json", "--evals-cache-dir",
                       str(pytester.path / "c2"))
    stats = server.stats()
    assert (stats["batches_created"], stats["batch_lines"], stats["received"]) == (1, 4, 0)
    live = suite_summary(read_json(pytester.path / "live.json"))["metrics"]
    batched = suite_summary(read_json(pytester.path / "batch.json"))["metrics"]
    assert batched == live
    # The log-probabilities came back through the batch results too.
    assert batched["clarity"]["mean"]["value"] == pytest.approx(5 * 0.7 + 4 * 0.3)


def test_a_judge_block_in_rag_answers_words_domain_and_a_list_of_criteria(
    pytester: pytest.Pytester, judge_server: JudgeServer
) -> None:
    """The same `judge:` spelling works in both families: `domain` names what is judged in
    the default persona, and `criteria` may be a list of rules; `domain` with
    `system_prompt` is a suite error, as it is in rag_answers."""
    judge_server.reply = scripted
    judge = {"domain": "Acme's billing support bot", "criteria": ["Never quote a price.", "Be brief."]}
    write_suite(pytester.path, CASES, asserts=[{"type": "llm_rubric", "criteria": RUBRIC, "judge": judge}])
    pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    rubric = [b for b in judge_server.requests if RUBRIC in last_user_message(b)]
    assert len(rubric) == 2
    for body in rubric:
        system, user = body["messages"][0]["content"], last_user_message(body)
        assert "Acme's billing support bot" in system
        assert "- Never quote a price.\n- Be brief." in user

    both = {"domain": "Acme's bot", "system_prompt": "You grade answers."}
    write_suite(pytester.path, CASES, asserts=[{"type": "llm_rubric", "criteria": RUBRIC, "judge": both}])
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*either 'system_prompt'*or 'domain', not both*"])
    assert result.ret == 1
