"""Failed cases are tolerated only by a gate on a quality metric of their suite (issue 25).

A gate on ``errors`` or ``cases`` says how many cases errored or ran, nothing about how
many answers were right: adding one must never turn a suite of wrong answers from FAIL
into PASS. And a suite whose gates pass although it computed no quality metric at all
(every case errored) measured nothing it could pass on. Plain and under ``-n 2``.
"""

from __future__ import annotations

from typing import Any

import pytest
from core_helpers import jb, jb_suite, read_summary, suite_by_name

from pytest_evals.controller.suite_verdict import CaseCounts, ReasonKind, verdict
from pytest_evals.model.gate import GateResult

WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
ALL_WRONG = [jb(True, False, case_id=f"w{i:02d}") for i in range(50)]


def run(pytester: pytest.Pytester, workers: list[str]) -> tuple[pytest.RunResult, dict[str, Any]]:
    runner = pytester.runpytest_subprocess if workers else pytester.runpytest
    result = runner(*workers, "-p", "no:cacheprovider", "--evals-json", "s.json")
    return result, suite_by_name(read_summary(pytester.path / "s.json"), "wrong")


@WORKERS
@pytest.mark.parametrize(
    "thresholds",
    [{"errors": {"max": 0}}, {"cases": {"min": 10}}, {"errors": {"max": 0}, "cases": {"min": 10}}, {}],
    ids=["errors-gate", "cases-gate", "both", "no-gates"],
)
def test_gates_on_errors_or_cases_never_excuse_wrong_answers(
    pytester: pytest.Pytester, workers: list[str], thresholds: dict[str, Any]
) -> None:
    jb_suite(pytester.path, "wrong", ALL_WRONG, thresholds)
    result, s = run(pytester, workers)
    assert result.ret == 1
    assert s["passed"] is False and all(g["passed"] for g in s["gates"])
    if thresholds:
        assert s["reasons"] == [
            "50 failed case(s) and no gate on a quality metric of the suite "
            "(gates on cases or errors do not excuse failed cases)"
        ]
        result.stdout.fnmatch_lines(["  FAILED wrong: 50 failed case(s) and no gate on a quality metric*"])
    else:
        assert s["reasons"] == ["50 failed and 0 erroring case(s); the suite has no gates"]


@WORKERS
def test_a_gate_on_a_quality_metric_still_tolerates_the_misses_it_allows(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    rows = [jb(True, True, case_id=f"r{i:02d}") for i in range(45)] + ALL_WRONG[:5]
    jb_suite(pytester.path, "wrong", rows, {"accuracy": {"min": 0.85}, "errors": {"max": 0}})
    result, s = run(pytester, workers)
    assert result.ret == 0 and s["passed"] is True
    result.stdout.fnmatch_lines(["exit status 0: 5 failed and 0 erroring case(s) are within the gates*"])


@WORKERS
def test_a_suite_that_computed_no_quality_metric_cannot_pass(pytester: pytest.Pytester, workers: list[str]) -> None:
    # Every case's label is unreadable: every case is an input error.
    rows = [jb(True, None, case_id=f"e{i:02d}", actual_outcome="perhaps") for i in range(8)]
    jb_suite(pytester.path, "wrong", rows, {"errors": {"max": 100}})
    result, s = run(pytester, workers)
    assert result.ret == 1
    assert s["cases"]["errors"] == 8 and all(g["passed"] for g in s["gates"])
    assert s["passed"] is False
    expected = (
        "no quality metric could be computed (8 of 8 case(s) errored, 0 skipped): "
        "gates on cases or errors alone cannot pass a suite"
    )
    assert s["problems"] == [expected] and s["reasons"] == [expected]
    result.stdout.fnmatch_lines([f"  PROBLEM wrong: {expected}"])


def test_the_verdict_rule_by_hand() -> None:
    errors_gate = GateResult("errors", "max", 0, 0.0, True)
    quality_gate = GateResult("accuracy.ci_low", "min", 0.5, 0.6, True)
    counts = CaseCounts(total=10, passed=7, failed=3)
    reasons = verdict(counts, [errors_gate], [], strict=False)
    assert [r.kind for r in reasons] == [ReasonKind.FAILED_CASES]
    assert verdict(counts, [errors_gate, quality_gate], [], strict=False) == []
    # XFAIL cases are expected failures: no gate needed for them.
    counts.xfailed = counts.xfailed_failures = 3
    assert verdict(counts, [errors_gate], [], strict=False) == []
    # --evals-strict is unchanged: any failed case fails the suite.
    assert [r.kind for r in verdict(counts, [quality_gate], [], strict=True)] == [ReasonKind.FAILED_CASES]
    # A partial population fails unless allowed.
    counts.deselected = 2
    assert [r.kind for r in verdict(counts, [quality_gate], [], strict=False)] == [ReasonKind.PARTIAL]
    assert verdict(counts, [quality_gate], [], strict=False, allow_partial=True) == []
