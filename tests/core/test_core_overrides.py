"""Command-line overrides of suite fields: dedicated flags and ``--evals-set``."""

from __future__ import annotations

from pathlib import Path

import pytest
from core_helpers import (
    jb,
    jb_counts,
    jb_suite,
    read_summary,
    suite_by_name,
    write_jsonl,
    write_suite,
)

#: A target that says "jailbreak" for every question, and records that it ran.
ALWAYS_TRUE_TARGET = """
from pathlib import Path

def classify(case):
    with (Path(__file__).parent / "calls.log").open("a") as fh:
        fh.write(case["question"] + "\\n")
    return {"actual_outcome": True}
"""


def _calls(root: Path) -> list[str]:
    log = root / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def _generate_suite(root: Path, **fields: object) -> None:
    # The saved outputs say "not a jailbreak"; the target says "jailbreak": the two
    # modes give different, recognisable results.
    rows = [jb(True, False, case_id="a"), jb(False, False, case_id="b")]
    write_jsonl(root, "data/g.jsonl", rows)
    (root / "always_true.py").write_text(ALWAYS_TRUE_TARGET)
    write_suite(
        root,
        "g.eval.yaml",
        task="jailbreak_guardrails",
        input_path="data/g.jsonl",
        target="always_true:classify",
        **fields,
    )


def test_no_evals_generate_scores_saved_outputs(pytester: pytest.Pytester) -> None:
    _generate_suite(pytester.path, generate=True)
    result = pytester.runpytest("--no-evals-generate", "-v")
    result.stdout.fnmatch_lines(["g.eval.yaml::a FAILED*", "g.eval.yaml::b PASSED*"])
    assert _calls(pytester.path) == []


def test_evals_generate_runs_the_target(pytester: pytest.Pytester) -> None:
    _generate_suite(pytester.path, generate=False)
    result = pytester.runpytest("--evals-generate", "-v", "--evals-json", "s.json")
    result.stdout.fnmatch_lines(["g.eval.yaml::a PASSED*", "g.eval.yaml::b FAILED*"])
    assert sorted(_calls(pytester.path)) == ["question a", "question b"]
    assert suite_by_name(read_summary(pytester.path / "s.json"), "g")["generate"] is True


def test_evals_set_generate_is_the_same_as_the_flag(pytester: pytest.Pytester) -> None:
    _generate_suite(pytester.path, generate=True)
    result = pytester.runpytest("--evals-set", "generate=false", "-v")
    result.stdout.fnmatch_lines(["g.eval.yaml::a FAILED*"])
    assert _calls(pytester.path) == []


def test_n_runs_and_dotted_keys(pytester: pytest.Pytester) -> None:
    jb_suite(
        pytester.path,
        "one",
        jb_counts(tp=3, tn=3, fp=1, fn=1),
        thresholds={"accuracy": {"min": 0.5}},
        metrics=[{"name": "faithfulness", "threshold": 0.5}],
    )
    jb_suite(
        pytester.path,
        "two",
        jb_counts(tp=3, tn=3, fp=1, fn=1, prefix="d"),
        thresholds={"accuracy": {"min": 0.5}},
    )
    result = pytester.runpytest(
        "--evals-n-runs",
        "4",
        # per suite: only "one" gets the stricter gate
        "--evals-set",
        "one:thresholds.accuracy.min=0.9",
        # dotted key into a list entry addressed by its name
        "--evals-set",
        "one:metrics.faithfulness.threshold=0.75",
        # for all suites
        "--evals-set",
        "what=overridden",
        "--evals-json",
        "s.json",
    )
    summary = read_summary(pytester.path / "s.json")
    one, two = suite_by_name(summary, "one"), suite_by_name(summary, "two")
    assert one["config"]["n_runs"] == two["config"]["n_runs"] == 4
    assert one["what"] == two["what"] == "overridden"
    assert one["config"]["thresholds"] == {"accuracy": {"min": 0.9}}
    assert two["config"]["thresholds"] == {"accuracy": {"min": 0.5}}
    assert one["config"]["metrics"][0]["threshold"] == 0.75
    assert [g["passed"] for g in one["gates"]] == [False]
    assert [g["passed"] for g in two["gates"]] == [True]
    result.stdout.fnmatch_lines(["*MISSED GATE one: accuracy = 0.75, required >= 0.9*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_per_suite_override_of_unknown_field_names_the_field(pytester: pytest.Pytester) -> None:
    jb_suite(pytester.path, "one", [jb(True, True, case_id="a")])
    jb_suite(pytester.path, "two", [jb(True, True, case_id="a")])
    result = pytester.runpytest("--evals-set", "one:nmu_runs=3")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["ERROR one.eval.yaml::suite-error*"])
    assert (
        "override 'nmu_runs': task 'jailbreak_guardrails' has no field 'nmu_runs'"
        in result.stdout.str()
    )


def test_override_value_that_fails_validation_is_a_suite_error(pytester: pytest.Pytester) -> None:
    jb_suite(pytester.path, "one", [jb(True, True, case_id="a")])
    result = pytester.runpytest("--evals-n-runs", "0")
    result.assert_outcomes(errors=1)
    assert "field 'n_runs'" in result.stdout.str()


def test_malformed_evals_set_is_a_usage_error(pytester: pytest.Pytester) -> None:
    jb_suite(pytester.path, "one", [jb(True, True, case_id="a")])
    result = pytester.runpytest("--evals-set", "no_equals_sign")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--evals-set 'no_equals_sign': expected KEY=VALUE or SUITE:KEY=VALUE*"]
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_global_override_of_a_field_no_suite_has_is_reported(pytester: pytest.Pytester) -> None:
    jb_suite(
        pytester.path, "one", [jb(True, True, case_id="a")], thresholds={"accuracy": {"min": 0.5}}
    )
    result = pytester.runpytest(
        "--evals-set", "tresholds.accuracy.min=0.99", "--evals-json", "s.json"
    )
    warning = (
        "--evals-set tresholds.accuracy.min=0.99: no suite in this run has a field 'tresholds'"
    )
    result.stdout.fnmatch_lines([f"WARNING: {warning}"])
    assert read_summary(pytester.path / "s.json")["warnings"] == [warning]
    # a known field used by some suite is no warning
    clean = pytester.runpytest(
        "--evals-set", "thresholds.accuracy.min=0.4", "--evals-json", "s.json"
    )
    assert "WARNING" not in clean.stdout.str()
    assert read_summary(pytester.path / "s.json")["warnings"] == []


def test_per_suite_override_naming_no_suite_is_reported(pytester: pytest.Pytester) -> None:
    jb_suite(pytester.path, "one", [jb(True, True, case_id="a")], thresholds={"accuracy": 0.5})
    result = pytester.runpytest(
        "--evals-set", "onee:thresholds.accuracy.min=0.99", "--evals-json", "s.json"
    )
    warnings = read_summary(pytester.path / "s.json")["warnings"]
    assert len(warnings) == 1 and "onee" in warnings[0]
    result.stdout.fnmatch_lines(["WARNING: *onee*"])
