"""``generate: true``: the target's answer is checked, its latency and cost bounded per
case from the case's usage record, which is saved with the generated outputs so a
re-scored run reads the same numbers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_evals.testing.fake_openai import last_user_message

from .conftest import JudgeServer, read_json, suite_summary, write_suite

TARGET = '''
import time

def answer(case):
    time.sleep(0.3 if case["id"] == "slow" else 0.0)
    return {"output": "Refunds take 5 days."}
'''


def test_latency_bounds_per_case_and_rescoring_reads_the_usage_record(pytester: pytest.Pytester) -> None:
    (pytester.path / "support_target.py").write_text(TARGET, encoding="utf-8")
    cases = [{"id": "fast", "question": "refund?"}, {"id": "slow", "question": "refund?"}]
    write_suite(pytester.path, cases, generate=True, target="support_target:answer",
                asserts=[{"type": "icontains", "value": "refund"}, {"type": "latency", "max": 200}])
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-json", "s.json")
    suite = suite_summary(read_json(pytester.path / "s.json"))
    by_id = {r["case_id"]: r for r in suite["case_results"]}
    assert by_id["fast"]["status"] == "passed"
    assert by_id["slow"]["status"] == "failed" and "ms > 200 ms" in by_id["slow"]["message"]
    slow_ms = by_id["slow"]["data"]["assertions"]["latency"]["value"]
    assert 300 <= slow_ms < 5000
    saved = [json.loads(line) for line in (pytester.path / suite["generated_path"]).read_text().splitlines()]
    assert [r["usage"]["latency_ms"] >= 300 for r in saved] == [False, True]
    assert all(r["output"] == "Refunds take 5 days." for r in saved)
    # Re-scored from the saved outputs: the same verdicts, from the saved usage.
    write_suite(pytester.path, saved, name="rescored",
                asserts=[{"type": "icontains", "value": "refund"}, {"type": "latency", "max": 200}])
    (pytester.path / "answers.eval.yaml").unlink()
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-json", "r.json")
    again = suite_summary(read_json(pytester.path / "r.json"), "rescored")
    assert {r["case_id"]: r["status"] for r in again["case_results"]} == {"fast": "passed", "slow": "failed"}


def test_latency_without_a_usage_record_is_an_input_error(pytester: pytest.Pytester) -> None:
    write_suite(pytester.path, [{"id": "a", "output": "hi"}], asserts=[{"type": "cost", "max": 0.01}])
    pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    [res] = suite_summary(read_json(pytester.path / "s.json"))["case_results"]
    assert res["status"] == "error" and "field 'usage.cost'" in res["message"]


def test_cost_bounds_a_model_target(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    def reply(body: dict[str, Any]) -> str:
        return "Refund " + "details " * (200 if "long" in last_user_message(body) else 1)

    judge_server.reply = reply
    cases = [{"id": "short", "question": "refund?"}, {"id": "long", "question": "refund, long please?"}]
    write_suite(pytester.path, cases, generate=True,
                target={"model": "gpt-4o-mini", "system_prompt": "You answer customers."},
                asserts=[{"type": "cost", "max": 0.0001}])
    # a loopback endpoint has no built-in price: the team states what its model costs
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-json", "s.json",
                                  "--evals-price", "gpt-4o-mini=0.15,0.6")
    by_id = {r["case_id"]: r for r in suite_summary(read_json(pytester.path / "s.json"))["case_results"]}
    costs = {k: r["data"]["assertions"]["cost"]["value"] for k, r in by_id.items()}
    assert 0 < costs["short"] < 0.0001 < costs["long"]
    assert by_id["short"]["status"] == "passed" and by_id["long"]["status"] == "failed"
