"""Features reach a suite's verdict and the terminal through the project's hooks.

A conftest stands in for a feature: through ``pytest_evals_suite_verdict`` it fails a
suite with a typed reason and adds a JSON section; through ``pytest_evals_terminal_suite``
and ``pytest_evals_terminal_summary`` it writes its lines in the one terminal summary.
Plain and ``-n 2`` runs agree (the hooks run on the controller only).
"""

from __future__ import annotations

import pytest
from core_helpers import jb_counts, jb_suite, read_summary, suite_by_name

from pytest_evals.controller.suite_verdict import Reason, ReasonKind, verdict
from pytest_evals.output.terminal_report import REASON_LABELS

FEATURE = """
import os
from pytest_evals.controller.suite_verdict import Reason, ReasonKind

def pytest_evals_suite_verdict(config, suite, task, results):
    assert "PYTEST_XDIST_WORKER" not in os.environ  # the controller's hook
    suite.sections["seen"] = {"cases": len(results), "task": type(task).__name__}
    if suite.name == "vetoed":
        suite.reasons.append(Reason(ReasonKind.UNCHECKED_GATES, f"feature veto: {len(results)} cases"))

def pytest_evals_terminal_suite(config, terminalreporter, suite):
    terminalreporter.write_line(f"  feature line for {suite.name}: {suite.sections['seen']['cases']} cases")

def pytest_evals_terminal_summary(config, terminalreporter):
    terminalreporter.write_line("feature run line")
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_feature_fails_a_suite_and_writes_its_lines(pytester: pytest.Pytester, workers: list[str]) -> None:
    pytester.makeconftest(FEATURE)
    jb_suite(pytester.path, "kept", jb_counts(2, 2, 0, 0), {"accuracy": {"min": 0.5}})
    jb_suite(pytester.path, "vetoed", jb_counts(2, 2, 0, 0, prefix="v"), {"accuracy": {"min": 0.5}})
    result = pytester.runpytest("--evals-json", "s.json", *workers)
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*pytest_evals summary*",
            "kept *-> PASSED",
            "  feature line for kept: 4 cases",
            "vetoed *-> FAILED",
            "*accuracy*1.000*>= 0.5*pass",
            "  FAILED vetoed: feature veto: 4 cases",
            "  feature line for vetoed: 4 cases",
            "JSON summary: s.json",
            "feature run line",
        ]
    )
    summary = read_summary(pytester.path / "s.json")
    kept, vetoed = suite_by_name(summary, "kept"), suite_by_name(summary, "vetoed")
    assert kept["passed"] and kept["reasons"] == []
    assert not vetoed["passed"] and vetoed["reasons"] == ["feature veto: 4 cases"]
    assert vetoed["seen"] == {"cases": 4, "task": kept["seen"]["task"]}
    assert summary["passed"] is False and summary["exit_status"] == 1


def test_the_run_lines_come_in_a_run_without_suites(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FEATURE)
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest()
    assert result.ret == 0
    result.stdout.fnmatch_lines(["feature run line"])
    assert "pytest_evals summary" not in result.stdout.str()


def test_reasons_are_typed_and_written_as_the_schema_words_them() -> None:
    missed = Reason(ReasonKind.MISSED_GATE, "recall = 0.5, required >= 0.9")
    assert str(missed) == "missed gate: recall = 0.5, required >= 0.9"
    assert str(Reason(ReasonKind.REGRESSION, "accuracy max drop 0.02")) == "regression: accuracy max drop 0.02"
    assert str(Reason(ReasonKind.PROBLEM, "bad input")) == "bad input"
    assert str(Reason(ReasonKind.INCONCLUSIVE, "accuracy max drop 0.02")) == "inconclusive: accuracy max drop 0.02"
    # Every kind has a terminal label, except regression gates' verdicts (a regression, or
    # an inconclusive gate under --evals-fail-inconclusive): their plugin shows them with
    # the paired test.
    assert set(ReasonKind) - set(REASON_LABELS) == {ReasonKind.REGRESSION, ReasonKind.INCONCLUSIVE}


def test_the_verdict_gives_each_reason_its_kind() -> None:
    from pytest_evals.controller.suite_verdict import CaseCounts

    counts = CaseCounts(total=3, passed=1, failed=1, errors=1, errors_by_kind={"exception": 1})
    reasons = verdict(counts, [], ["unreadable input"], strict=False)
    assert [(r.kind, r.text) for r in reasons] == [
        (ReasonKind.PROBLEM, "unreadable input"),
        (ReasonKind.FAILED_CASES, "1 failed and 1 erroring case(s); the suite has no gates"),
    ]
