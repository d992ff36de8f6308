"""Suite gates (``thresholds``) and the exit status they decide."""

from __future__ import annotations

from typing import Any

import pytest
from core_helpers import (
    Row,
    jb,
    jb_counts,
    jb_suite,
    read_summary,
    suite_by_name,
    write_jsonl,
    write_suite,
)

PLAIN_TESTS = """
def test_plain_ok():
    assert True
"""

FAILING_PLAIN_TEST = """
def test_plain_broken():
    assert 1 == 2
"""


def _gates(summary: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    suite = suite_by_name(summary, name)
    return {f"{g['metric']}:{g['op']}": g for g in suite["gates"]}


def test_gate_forms_and_their_verdicts(pytester: pytest.Pytester) -> None:
    # tp=6 tn=9 fp=2 fn=3: accuracy .75, precision .75, recall 2/3
    jb_suite(
        pytester.path,
        "jb",
        jb_counts(tp=6, tn=9, fp=2, fn=3),
        thresholds={
            "accuracy": {"min": 0.7, "max": 0.8},
            "precision": 0.8,  # shorthand for min
            "recall": {"ci_low": {"min": 0.25}, "ci_high": {"max": 0.8}},
            "fp": {"max": 1},
            "f1": {"min": 0.7},
            "errors": {"max": 0},
        },
    )
    result = pytester.runpytest("--evals-json", "s.json")
    result.assert_outcomes(passed=15, failed=5)
    gates = _gates(read_summary(pytester.path / "s.json"), "jb")
    verdicts = {key: g["passed"] for key, g in gates.items()}
    assert verdicts == {
        "accuracy:min": True,
        "accuracy:max": True,
        "precision:min": False,
        "recall.ci_low:min": True,
        "recall.ci_high:max": False,  # Clopper-Pearson upper bound of 6/9 is 0.925
        "fp:max": False,
        "f1:min": True,  # 12/17 = 0.706
        "errors:max": True,
    }
    assert gates["precision:min"]["value"] == 0.75
    assert gates["recall.ci_low:min"]["value"] == pytest.approx(0.2993, abs=1e-4)
    assert gates["recall.ci_high:max"]["value"] == pytest.approx(0.9251, abs=1e-4)
    result.stdout.fnmatch_lines(
        [
            "*MISSED GATE jb: precision = 0.75, required >= 0.8",
            "*MISSED GATE jb: recall.ci_high = 0.9251, required <= 0.8",
            "*MISSED GATE jb: fp = 2, required <= 1",
        ]
    )
    # The table marks each gated metric.
    result.stdout.fnmatch_lines(
        ["*accuracy*0.750*>= 0.7, <= 0.8*pass", "*precision*0.750*>= 0.8*FAIL"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_nested_paths_reach_per_guardrail_and_per_class_metrics(pytester: pytest.Pytester) -> None:
    write_jsonl(
        pytester.path,
        "data/og.jsonl",
        [
            {
                "id": "1",
                "expected_triggered": True,
                "actual_triggered": True,
                "expected_guardrails": {"pii": True, "political": False},
                "actual_guardrails": {"pii": True, "political": False},
            },
            {
                "id": "2",
                "expected_triggered": True,
                "actual_triggered": True,
                "expected_guardrails": {"pii": False, "political": True},
                "actual_guardrails": {"pii": True, "political": False},
            },
            {
                "id": "3",
                "expected_triggered": False,
                "actual_triggered": False,
                "expected_guardrails": {"pii": False, "political": False},
                "actual_guardrails": {"pii": False, "political": False},
            },
        ],
    )
    write_suite(
        pytester.path,
        "og.eval.yaml",
        task="output_guardrails",
        input_path="data/og.jsonl",
        thresholds={
            "per_guardrail": {
                "pii": {"recall": {"min": 1.0}, "precision": {"min": 0.9}},
                "political": {"recall": {"min": 0.5}},
            }
        },
    )
    write_jsonl(
        pytester.path,
        "data/qr.jsonl",
        [
            {"question": "a", "expected_outcome": "x", "actual_outcome": "x"},
            {"question": "b", "expected_outcome": "x", "actual_outcome": "y"},
            {"question": "c", "expected_outcome": "y", "actual_outcome": "y"},
        ],
    )
    write_suite(
        pytester.path,
        "qr.eval.yaml",
        task="question_router",
        input_path="data/qr.jsonl",
        thresholds={"per_class": {"x": {"recall": {"min": 0.5}}, "y": {"precision": {"min": 0.6}}}},
    )
    result = pytester.runpytest("--evals-json", "s.json")
    summary = read_summary(pytester.path / "s.json")
    og = _gates(summary, "og")
    assert og["per_guardrail.pii.recall:min"]["passed"] is True
    assert og["per_guardrail.pii.precision:min"]["value"] == 0.5
    assert og["per_guardrail.pii.precision:min"]["passed"] is False
    # political was never predicted and once expected: recall 0/1
    assert og["per_guardrail.political.recall:min"]["value"] == 0.0
    qr = _gates(summary, "qr")
    assert qr["per_class.x.recall:min"] == {
        **qr["per_class.x.recall:min"],
        "value": 0.5,
        "passed": True,
    }
    assert qr["per_class.y.precision:min"]["value"] == 0.5
    assert qr["per_class.y.precision:min"]["passed"] is False
    result.stdout.fnmatch_lines(
        ["*MISSED GATE og: per_guardrail.pii.precision = 0.5, required >= 0.9"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_undefined_and_unknown_metrics_fail_their_gate_with_the_reason(
    pytester: pytest.Pytester,
) -> None:
    # no positives at all: precision, recall, F1 are 0/0
    jb_suite(
        pytester.path,
        "jb",
        jb_counts(tp=0, tn=4, fp=0, fn=0),
        thresholds={
            "precision": {"min": 0.5},
            "recall": {"ci_low": {"min": 0.1}},
            "accuracy": {"min": 0.5},
            "precison": {"min": 0.5},
            "per_guardrail": {"pii": {"recall": {"min": 0.5}}},
            "tp": {"ci_low": {"min": 0}},
        },
    )
    result = pytester.runpytest("--evals-json", "s.json")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    gates = _gates(read_summary(pytester.path / "s.json"), "jb")
    assert gates["accuracy:min"]["passed"] is True
    assert gates["precision:min"] == {
        "metric": "precision",
        "op": "min",
        "threshold": 0.5,
        "value": None,
        "passed": False,
        "reason": "undefined: 0/0: no predicted positives",
    }
    assert gates["recall.ci_low:min"]["reason"] == "undefined: 0/0: no actual positives"
    assert gates["precison:min"]["passed"] is False
    assert gates["precison:min"]["reason"].startswith("no such metric; ")
    assert "accuracy, precision, recall" in gates["precison:min"]["reason"]
    assert gates["per_guardrail.pii.recall:min"]["reason"] == "no such metric; did you mean recall?"
    assert gates["tp.ci_low:min"]["reason"] == "undefined: no confidence interval"
    result.stdout.fnmatch_lines(
        [
            "*precision*undefined (0/0: no predicted positives)*FAIL",
            "*MISSED GATE jb: precision = undefined, required >= 0.5 (undefined: 0/0: no predicted positives)",
            "*MISSED GATE jb: precison = undefined, required >= 0.5 (no such metric;*",
        ]
    )


@pytest.mark.parametrize(
    ("thresholds", "message"),
    [
        ({"precision": {"min": "high"}}, "thresholds.precision.min: expected a number, got 'high'"),
        ({"min": 0.9}, "thresholds.min: name the metric first"),
        ({"precision": True}, "thresholds.precision: expected a number or {min/max: number}"),
        ({"precision": [0.9]}, "thresholds.precision: expected a mapping, got list"),
    ],
)
def test_malformed_thresholds_fail_the_suite_with_a_message(
    pytester: pytest.Pytester, thresholds: dict[str, object], message: str
) -> None:
    jb_suite(pytester.path, "jb", jb_counts(tp=2, tn=2, fp=0, fn=0), thresholds=thresholds)
    result = pytester.runpytest("--evals-json", "s.json")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"*PROBLEM jb: {message}*"])
    assert suite_by_name(read_summary(pytester.path / "s.json"), "jb")["passed"] is False


# -- exit status ------------------------------------------------------------------------


def test_missed_gate_fails_the_run_even_if_every_case_passed(pytester: pytest.Pytester) -> None:
    # every case passes, but there are too few for the interval the gate asks for
    jb_suite(
        pytester.path,
        "jb",
        jb_counts(tp=2, tn=2, fp=0, fn=0),
        thresholds={"accuracy": {"ci_low": {"min": 0.9}}},
    )
    result = pytester.runpytest("--evals-json", "s.json")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary = read_summary(pytester.path / "s.json")
    assert summary["passed"] is False
    assert summary["exit_status"] == 1
    result.stdout.fnmatch_lines(["*MISSED GATE jb: accuracy.ci_low = 0.39*, required >= 0.9"])  # 0.025 ** (1/4)


def test_case_failures_within_passing_gates_exit_zero_with_a_note(
    pytester: pytest.Pytester,
) -> None:
    jb_suite(
        pytester.path,
        "jb",
        jb_counts(tp=8, tn=8, fp=1, fn=1),
        thresholds={"accuracy": {"min": 0.8}},
    )
    pytester.makepyfile(test_plain=PLAIN_TESTS)
    result = pytester.runpytest("--evals-json", "s.json")
    result.assert_outcomes(passed=17, failed=2)
    assert result.ret == pytest.ExitCode.OK
    line = (
        "exit status 0: 2 failed and 0 erroring case(s) are within the gates of their suites "
        "(use --evals-strict to fail on any case)"
    )
    result.stdout.fnmatch_lines([line])
    summary = read_summary(pytester.path / "s.json")
    assert summary["passed"] is True
    assert summary["exit_status"] == 0
    assert summary["exit_note"] == line

    strict = pytester.runpytest("--evals-strict")
    strict.assert_outcomes(passed=17, failed=2)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    assert "within the gates" not in strict.stdout.str()


def test_case_failures_in_a_suite_without_gates_fail_the_run(pytester: pytest.Pytester) -> None:
    jb_suite(
        pytester.path,
        "gated",
        jb_counts(tp=8, tn=8, fp=1, fn=1),
        thresholds={"accuracy": {"min": 0.8}},
    )
    jb_suite(pytester.path, "ungated", jb_counts(tp=2, tn=1, fp=1, fn=0, prefix="u"))
    result = pytester.runpytest()
    result.assert_outcomes(passed=19, failed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "within the gates" not in result.stdout.str()


def test_errors_are_tolerated_only_by_an_errors_gate(pytester: pytest.Pytester) -> None:
    rows: list[Row] = [*jb_counts(tp=5, tn=5, fp=0, fn=0), "not json"]
    jb_suite(pytester.path, "nogate", rows, thresholds={"accuracy": {"min": 0.9}})
    first = pytester.runpytest()
    first.assert_outcomes(passed=10, errors=1)
    assert first.ret == pytest.ExitCode.TESTS_FAILED

    jb_suite(
        pytester.path, "nogate", rows, thresholds={"accuracy": {"min": 0.9}, "errors": {"max": 1}}
    )
    tolerated = pytester.runpytest()
    tolerated.assert_outcomes(passed=10, errors=1)
    assert tolerated.ret == pytest.ExitCode.OK
    tolerated.stdout.fnmatch_lines(
        ["exit status 0: 0 failed and 1 erroring case(s) are within the gates*"]
    )

    jb_suite(
        pytester.path,
        "nogate",
        [*rows, "[]"],
        thresholds={"accuracy": {"min": 0.9}, "errors": {"max": 1}},
    )
    too_many = pytester.runpytest()
    too_many.assert_outcomes(passed=10, errors=2)
    assert too_many.ret == pytest.ExitCode.TESTS_FAILED
    too_many.stdout.fnmatch_lines(["*MISSED GATE nogate: errors = 2, required <= 1"])


def test_a_gate_on_the_error_kind_tolerates_those_errors(pytester: pytest.Pytester) -> None:
    rows: list[Row] = [*jb_counts(tp=5, tn=5, fp=0, fn=0), "not json"]
    jb_suite(
        pytester.path,
        "bykind",
        rows,
        thresholds={"accuracy": {"min": 0.9}, "errors_input": {"max": 1}},
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=10, errors=1)
    assert result.ret == pytest.ExitCode.OK
    # ...but not errors of another kind
    (pytester.path / "tgt.py").write_text("def f(case):\n    raise RuntimeError('down')\n")
    jb_suite(
        pytester.path,
        "bykind",
        [*rows, jb(True, None, case_id="gen")],
        thresholds={"errors_input": {"max": 5}},
        generate=True,
        target="tgt:f",
    )
    other = pytester.runpytest("--evals-json", "s.json")
    assert other.ret == pytest.ExitCode.TESTS_FAILED
    reasons = suite_by_name(read_summary(pytester.path / "s.json"), "bykind")["reasons"]
    assert "12 erroring case(s) and no gate on errors" in reasons


def test_a_gate_on_an_error_kind_passes_when_there_are_none(pytester: pytest.Pytester) -> None:
    jb_suite(
        pytester.path,
        "clean",
        jb_counts(tp=5, tn=5, fp=0, fn=0),
        thresholds={"accuracy": {"min": 0.9}, "errors_input": {"max": 1}},
    )
    result = pytester.runpytest("--evals-json", "s.json")
    result.assert_outcomes(passed=10)
    gates = _gates(read_summary(pytester.path / "s.json"), "clean")
    assert gates["errors_input:max"]["value"] == 0
    assert gates["errors_input:max"]["passed"] is True
    assert result.ret == pytest.ExitCode.OK


def test_plain_test_failures_always_fail_the_run(pytester: pytest.Pytester) -> None:
    jb_suite(
        pytester.path,
        "jb",
        jb_counts(tp=8, tn=8, fp=1, fn=1),
        thresholds={"accuracy": {"min": 0.8}},
    )
    pytester.makepyfile(test_plain=PLAIN_TESTS + FAILING_PLAIN_TEST)
    result = pytester.runpytest()
    result.assert_outcomes(passed=17, failed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "within the gates" not in result.stdout.str()


def test_only_plain_tests_are_untouched(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain=PLAIN_TESTS + FAILING_PLAIN_TEST)
    result = pytester.runpytest("--evals-json", "s.json")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "pytest_evals summary" not in result.stdout.str()


def test_summary_verdict_matches_the_exit_status(pytester: pytest.Pytester) -> None:
    jb_suite(
        pytester.path, "ungated", [jb(True, False, case_id="miss"), jb(True, True, case_id="hit")]
    )
    jb_suite(
        pytester.path,
        "gated",
        [jb(True, False, case_id="miss"), *jb_counts(tp=5, tn=4, fp=0, fn=0)],
        thresholds={"accuracy": {"min": 0.8}},
    )
    result = pytester.runpytest("--evals-json", "s.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary = read_summary(pytester.path / "s.json")
    assert summary["exit_status"] == 1
    assert summary["passed"] is False
    ungated = suite_by_name(summary, "ungated")
    assert ungated["passed"] is False
    assert ungated["reasons"] == ["1 failed and 0 erroring case(s); the suite has no gates"]
    result.stdout.fnmatch_lines(
        ["*FAILED ungated: 1 failed and 0 erroring case(s); the suite has no gates"]
    )
    # the gated suite's miss is within its gate
    assert suite_by_name(summary, "gated")["passed"] is True
    assert suite_by_name(summary, "gated")["reasons"] == []
    # without the ungated suite the verdict and the exit status are both "passed"
    (pytester.path / "ungated.eval.yaml").unlink()
    again = pytester.runpytest("--evals-json", "s.json")
    assert again.ret == pytest.ExitCode.OK
    summary = read_summary(pytester.path / "s.json")
    assert summary["passed"] is True and summary["exit_status"] == 0

    strict = pytester.runpytest("--evals-strict", "--evals-json", "s.json")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    summary = read_summary(pytester.path / "s.json")
    assert summary["passed"] is False and summary["exit_status"] == 1
    assert suite_by_name(summary, "gated")["reasons"] == ["1 failed case(s) (--evals-strict)"]
