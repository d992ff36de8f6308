"""Every metric through the real client and judge, against a scripted loopback server."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from . import judge_script as js
from .conftest import JudgeServer, inline_results, write_suite
from .samples import CASE, CONTEXT

ALL = ["relevance", "faithfulness", "context_relevancy", "coherence", "factual_correctness", "factual_recall"]
Q_A: str = CASE["question"]
CASE_B: dict[str, Any] = {
    "id": "passport",
    "question": "How much does it cost to renew a passport online?",
    "ideal_answer": "It costs £88.50 online.",
    "llm_answer": "It costs £88.50 to renew online. Allow 3 weeks.",
    "structured_contexts": [{
        "exact_path": "/renew-adult-passport#online", "title": "Renew your passport",
        "heading_hierarchy": None, "description": "Costs and times.",
        "html_content": "<p>It costs &pound;88.50 online.</p><ol><li>Get a photo</li><li>Pay by card</li></ol>",
    }],
}
Q_B: str = CASE_B["question"]

SCRIPT: dict[tuple[str, str], Any] = {
    ("relevance", Q_A): js.relevance("yes", "yes", "no", "idk", reason="one statement is off topic"),
    ("faithfulness", Q_A): js.faithfulness("yes", "no", reason="the amount contradicts the page"),
    ("context_relevancy", Q_A): js.context_relevancy("yes", "no", "no", reason="eligibility is missing"),
    ("coherence", Q_A): js.coherence(4, reason="clear but abrupt"),
    ("facts", Q_A): js.facts(2, 1, 3, reason="misses three facts"),
    ("relevance", Q_B): js.relevance("yes"),
    ("faithfulness", Q_B): js.faithfulness("yes", "idk"),
    ("context_relevancy", Q_B): js.context_relevancy("yes"),
    ("coherence", Q_B): js.coherence(5),
    ("facts", Q_B): js.facts(3, 0, 1),
}

EXPECTED = {
    "wfp": {"relevance": 0.75, "faithfulness": 0.5, "context_relevancy": 1 / 3, "coherence": 0.75,
            "factual_correctness": 2 / 3, "factual_recall": 2 / 5},
    # faithfulness [yes, idk]: 0.5 with GOV.UK Chat's ambiguous-claims penalty (issue 15;
    # it was 1.0 when "idk" counted as faithful).
    "passport": {"relevance": 1.0, "faithfulness": 0.5, "context_relevancy": 1.0, "coherence": 1.0,
                 "factual_correctness": 1.0, "factual_recall": 0.75},
}


def metrics_spec(**thresholds: float) -> list[dict[str, Any]]:
    return [{"name": m, "threshold": thresholds.get(m, 0.0)} for m in ALL]


def test_each_metric_scores_exactly_from_the_verdicts(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    judge_server.script(SCRIPT)
    write_suite(pytester, [CASE, CASE_B], metrics=metrics_spec())
    results = inline_results(pytester.inline_run("-p", "no:cacheprovider"))
    assert set(results) == {"wfp", "passport"}
    for case_id, expected in EXPECTED.items():
        r = results[case_id]
        assert r.status == "passed", r.message
        assert r.scores == pytest.approx(expected)
        for name, score in expected.items():
            entry = r.data["metrics"][name]
            assert entry["score"] == pytest.approx(score) and entry["runs"] == [pytest.approx(score)]
    a = results["wfp"].details["metrics"]
    assert a["relevance"]["runs"][0]["counts"] == {"yes": 2, "no": 1, "idk": 1}
    assert a["relevance"]["runs"][0]["reason"] == "one statement is off topic"
    assert [c["verdict"] for c in a["faithfulness"]["runs"][0]["verdicts"]["claims"]] == ["yes", "no"]
    assert a["context_relevancy"]["runs"][0]["verdicts"]["needs"][1]["verdict"] == "no"
    assert a["coherence"]["runs"][0]["verdicts"] == {"rubric": 4}
    assert a["factual_recall"]["runs"][0]["verdicts"]["facts"]["FN"] == ["fn0", "fn1", "fn2"]
    # precision and recall read one classification: 5 judge requests per case, not 6
    assert len(judge_server.judge.requests) == 10
    assert len(judge_server.judge.prompts("facts")) == 2


def test_judge_sees_flattened_contexts_never_raw_html(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    write_suite(pytester, [CASE, CASE_B], metrics=ALL)
    pytester.inline_run("-p", "no:cacheprovider")
    expected_a = ("[Context 1]\nWinter Fuel Payment\nWhat you'll get > How much\nHow much you can get.\n"
                  "How much\n\nYou’ll get £300 if you live alone.\n\n  * paid in November")
    expected_b = ("[Context 1]\nRenew your passport\nCosts and times.\nIt costs £88.50 online.\n\n"
                   " 1. Get a photo\n 2. Pay by card")
    for metric in ("faithfulness", "context_relevancy"):
        prompts = judge_server.judge.prompts(metric)
        assert len(prompts) == 2
        by_q = {js.section(p, "QUESTION"): js.section(p, "CONTEXT") for p in prompts}
        assert by_q[Q_A] == expected_a
        assert by_q[Q_B] == expected_b
        for p in prompts:
            assert "<" not in js.section(p, "CONTEXT") and "&pound;" not in p and "&rsquo;" not in p
    # metrics that do not read the contexts are not sent them
    for metric in ("relevance", "coherence", "facts"):
        assert all("[Context 1]" not in p for p in judge_server.judge.prompts(metric))
    assert CONTEXT["html_content"] not in json.dumps(judge_server.judge.requests)


def test_per_metric_model_and_temperature_reach_the_request(pytester: pytest.Pytester,
                                                           judge_server: JudgeServer) -> None:
    write_suite(pytester, [CASE], metrics=[
        {"name": "relevance", "model": "judge-a", "temperature": 0.7},
        {"name": "factual_correctness", "model": "judge-b"},
        {"name": "factual_recall", "model": "judge-c"},
    ])
    inline_results(pytester.inline_run("-p", "no:cacheprovider"))
    seen = sorted((r["model"], r.get("temperature")) for r in judge_server.judge.requests)
    # different models for precision and recall: two classifications, each with its own model
    assert [m for m, _t in seen] == ["judge-a", "judge-b", "judge-c"]
    assert dict(seen)["judge-a"] == 0.7


def test_threshold_failure_lists_every_metric(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    judge_server.script(SCRIPT)
    # With the ambiguous-claims penalty off, passport's [yes, idk] faithfulness is 1.0.
    write_suite(pytester, [CASE, CASE_B], metrics=[
        {"name": "relevance", "threshold": 0.8}, {"name": "faithfulness", "threshold": 1.0},
        {"name": "coherence", "threshold": 0.75},
    ], penalize_ambiguous_claims=False)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*2 of 3 metric(s) below threshold: relevance, faithfulness",
        "  FAIL relevance: 0.75 < threshold 0.80 - judge: one statement is off topic",
        "  FAIL faithfulness: 0.50 < threshold 1.00 - judge: the amount contradicts the page",
        "  ok   coherence: 0.75 >= threshold 0.75 - judge: clear but abrupt",
    ])


def test_n_runs_are_distinct_requests_averaged_with_std(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    judge_server.script({
        ("relevance", Q_A): [js.relevance("yes"), js.relevance("yes", "no"), js.relevance("no")],
        ("coherence", Q_A): [js.coherence(5), js.coherence(3), js.coherence(4)],
    })
    write_suite(pytester, [CASE], metrics=["relevance", "coherence"], n_runs=3)
    (r,) = inline_results(pytester.inline_run("-p", "no:cacheprovider")).values()
    rel, coh = r.data["metrics"]["relevance"], r.data["metrics"]["coherence"]
    # the three runs get the three scripted replies, in whatever order they were sent
    assert sorted(rel["runs"]) == [0.0, 0.5, 1.0]
    assert rel["score"] == pytest.approx(0.5) and rel["std"] == pytest.approx(0.5)
    assert sorted(coh["runs"]) == [0.5, 0.75, 1.0]
    assert coh["score"] == pytest.approx(0.75) and coh["std"] == pytest.approx(0.25)
    assert r.status == "failed"
    assert "FAIL relevance: 0.50 < threshold 0.80 (mean of 3 runs, std 0.50)" in (r.message or "")
    assert judge_server.server.stats()["received"] == 6
    # a second run is answered from the cache, run by run: same scores, no new request
    judge_server.judge.calls.clear()
    (again,) = inline_results(pytester.inline_run("-p", "no:cacheprovider")).values()
    assert judge_server.server.stats()["received"] == 6
    assert sorted(again.data["metrics"]["relevance"]["runs"]) == [0.0, 0.5, 1.0]
    assert all(run["cached"] for run in again.details["metrics"]["relevance"]["runs"])


def test_zero_over_zero_is_an_error_and_other_scores_are_kept(pytester: pytest.Pytester,
                                                             judge_server: JudgeServer) -> None:
    # No claims now scores 1.0 (their rule, issue 15); a factual 0/0 is still undefined.
    judge_server.script({
        ("facts", Q_A): js.facts(0, 0, 2),  # no key facts in the answer: TP + FP = 0
        ("relevance", Q_A): js.relevance("yes", "no"),
    })
    write_suite(pytester, [CASE, CASE_B], metrics=["relevance", "factual_correctness"],
                thresholds={"relevance": {"mean": {"min": 0.5}}})
    reprec = pytester.inline_run("-p", "no:cacheprovider")
    results = inline_results(reprec)
    r = results["wfp"]
    assert r.status == "error" and r.error_kind == "judge"
    assert r.scores == {"relevance": 0.5, "factual_correctness": None}
    assert r.data["metrics"]["factual_correctness"]["error"] == "judge"
    assert r.message is not None
    lines = r.message.splitlines()
    assert lines[0] == "1 metric(s) could not be scored: factual_correctness; below threshold: relevance"
    assert lines[1] == "  ERROR factual_correctness: score undefined (0/0: the answer has no key facts (TP + FP = 0))"
    assert lines[2].startswith("  FAIL relevance: 0.50 < threshold 0.80")
    raw = r.details["metrics"]["factual_correctness"]["errors"][0]["raw_reply"]
    assert json.loads(raw)["TP"] == []
    passed, _skipped, failed = reprec.listoutcomes()
    assert len(passed) == 1 and len(failed) == 1  # the error is a pytest error, never a pass


def test_unparseable_judge_reply_is_an_error_with_the_raw_reply(pytester: pytest.Pytester,
                                                               judge_server: JudgeServer) -> None:
    judge_server.script({("coherence", Q_A): "I would rate this answer quite coherent, maybe a 4."})
    write_suite(pytester, [CASE], metrics=["relevance", "coherence"])
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "summary.json")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*1 metric(s) could not be scored: coherence",
        "*ERROR coherence: judge reply is not a JSON object after 3 attempts*maybe a 4*",
        "*ok   relevance: 1.00 >= threshold 0.80*",
    ])
    # the judge re-asked twice, showing the model its bad reply
    assert len(judge_server.judge.prompts("coherence")) == 3
    summary = json.loads((pytester.path / "summary.json").read_text())
    suite = summary["suites"][0]
    assert suite["cases"]["errors"] == 1 and suite["cases"]["errors_by_kind"] == {"judge": 1}


def test_missing_field_is_an_error_naming_field_and_metric(pytester: pytest.Pytester,
                                                          judge_server: JudgeServer) -> None:
    no_ideal = {k: v for k, v in CASE_B.items() if k != "ideal_answer"}
    write_suite(pytester, [CASE, no_ideal], metrics=["relevance", "factual_correctness"])
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "summary.json")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*rag.jsonl:2: field 'ideal_answer' (needed by metric factual_correctness) is missing or empty",
    ])
    suite = json.loads((pytester.path / "summary.json").read_text())["suites"][0]
    assert suite["cases"]["errors_by_kind"] == {"input": 1}
    # the bad case cost no judge call
    assert {js.section(p, "QUESTION") for p in judge_server.judge.prompts("relevance")} == {Q_A}


def test_suite_gates_on_metric_aggregates(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    judge_server.script(SCRIPT)
    write_suite(pytester, [CASE, CASE_B], metrics=metrics_spec(),
                thresholds={"faithfulness": {"mean": {"min": 0.9}}, "relevance": {"mean": {"min": 0.8}}})
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "summary.json")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*MISSED GATE rag: faithfulness.mean = 0.5, required >= 0.9*"])
    suite = json.loads((pytester.path / "summary.json").read_text())["suites"][0]
    gates = {g["metric"]: g["passed"] for g in suite["gates"]}
    assert gates == {"faithfulness.mean": False, "relevance.mean": True}
    m = suite["metrics"]
    assert m["relevance"]["mean"]["value"] == pytest.approx(0.875)
    assert m["factual_recall"]["median"]["value"] == pytest.approx((0.4 + 0.75) / 2)
    assert m["context_relevancy"]["std"]["value"] == pytest.approx(math.sqrt(2 * (1 / 3) ** 2))
    assert m["faithfulness"]["pass_rate"]["value"] == 1.0  # thresholds are 0 here
    assert m["all_metrics_pass_rate"]["value"] == 1.0
    assert suite["tables"]["judge"] == "llm"
