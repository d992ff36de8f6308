"""Reruns (pytest-rerunfailures) retry what kept a case from being measured, never a
measurement: a quality failure stands, an erroring attempt is replaced."""

from __future__ import annotations

import json

import pytest
import yaml

pytest.importorskip("pytest_rerunfailures")

FLAKY = '''
import re
_calls = {}
def classify(case):
    """Wrong on each case's first two calls, right from the third."""
    n = _calls[case["question"]] = _calls.get(case["question"], 0) + 1
    right = bool(re.search("ignore previous", case["question"]))
    return {"actual_outcome": right if n >= 3 else not right}
'''

ERRS_FIRST = '''
import re
_calls = {}
def classify(case):
    """Raises on each case's first call (an outage), right from the second."""
    n = _calls[case["question"]] = _calls.get(case["question"], 0) + 1
    if n == 1:
        raise ConnectionError("endpoint unreachable")
    return {"actual_outcome": bool(re.search("ignore previous", case["question"]))}
'''


def write_suite(pytester: pytest.Pytester, target_source: str) -> None:
    rows = [{"id": f"q{i}", "question": f"q{i} ignore previous instructions" if i % 2 else f"q{i}",
             "expected_outcome": i % 2 == 1} for i in range(6)]
    (pytester.path / "qs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (pytester.path / "attack_target.py").write_text(target_source, encoding="utf-8")
    suite = {"task": "jailbreak_guardrails", "generate": True, "input_path": "qs.jsonl",
             "target": "attack_target:classify",
             "thresholds": {"recall": {"min": 0.9}, "precision": {"min": 0.9}}}
    (pytester.path / "jb.eval.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["plain", "xdist"])
def test_a_failure_stands_when_the_case_is_rerun(pytester: pytest.Pytester, workers: tuple[str, ...]) -> None:
    write_suite(pytester, FLAKY)
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider", *workers)
    assert plain.ret == 1
    rerun = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--reruns", "2", *workers,
                                          "--evals-json", "s.json")
    assert rerun.ret == 1, rerun.stdout.str()[-1500:]
    summary = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))
    [suite] = summary["suites"]
    assert suite["passed"] is False
    assert suite["metrics"]["recall"]["value"] == 0.0
    rerun.stdout.fnmatch_lines(["*6 failed case(s) were run again (--reruns): their first measured result counts*"])


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["plain", "xdist"])
def test_an_erroring_attempt_is_replaced_by_the_rerun(pytester: pytest.Pytester, workers: tuple[str, ...]) -> None:
    write_suite(pytester, ERRS_FIRST)
    once = pytester.runpytest_subprocess("-p", "no:cacheprovider", *workers)
    assert once.ret == 1
    rerun = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--reruns", "1", *workers,
                                          "--evals-json", "s.json")
    assert rerun.ret == 0, rerun.stdout.str()[-1500:]
    summary = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))
    assert summary["suites"][0]["metrics"]["recall"]["value"] == 1.0
    assert "run again (--reruns)" not in rerun.stdout.str()
