"""Node ids are unique by construction, and honest intervals reach the gates.

Every case line is counted whatever ids the data holds (a real id may look like any
renaming scheme), plain and under ``-n 2``; a single all-right case cannot pass a gate
on the lower bound of F1.
"""

from __future__ import annotations

import re

import pytest
from core_helpers import collected_ids, jb, jb_suite, read_summary, suite_by_name

XDIST = [pytest.param([], id="plain"), pytest.param(["-n", "2"], id="xdist")]


def run(pytester: pytest.Pytester, args: list[str], *extra: str) -> pytest.RunResult:
    if args:
        return pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider", *extra)
    return pytester.runpytest("-p", "no:cacheprovider", *extra)


@pytest.mark.parametrize("args", XDIST)
def test_an_id_shaped_like_a_renamed_duplicate_keeps_its_own_result(pytester: pytest.Pytester, args: list[str]) -> None:
    jb_suite(
        pytester.path,
        "ids",
        [
            jb(True, True, case_id="a"),  # line 1: right
            jb(True, False, case_id="a@line-3"),  # line 2: wrong (the old scheme's rename of line 3)
            jb(True, True, case_id="a"),  # line 3: duplicate id -> input error
            jb(False, False, case_id="a[dup-2]"),  # line 4: looks like our suffix; made safe (and hashed)
        ],
        thresholds={"accuracy": {"min": 1.0}},
    )
    result = run(pytester, args, "-v", "--evals-json", "s.json")
    result.assert_outcomes(passed=2, failed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    for node in ("ids.eval.yaml::a ", "ids.eval.yaml::a@line-3 ", "ids.eval.yaml::a[dup-2] ", "ids.eval.yaml::a_dup-2_~c7391fef "):
        assert node in out, node
    assert "data/ids.jsonl:3: duplicate id 'a' (first used at line 1)" in out
    suite = suite_by_name(read_summary(pytester.path / "s.json"), "ids")
    assert suite["cases"]["total"] == 4  # every line counted
    assert (suite["cases"]["failed"], suite["cases"]["errors"]) == (1, 1)
    assert suite["metrics"]["accuracy"]["value"] == pytest.approx(2 / 3)
    gate = {g["metric"]: g for g in suite["gates"]}["accuracy"]
    assert gate["passed"] is False
    assert suite["passed"] is False


def test_duplicate_ids_get_distinct_node_ids_at_collection(pytester: pytest.Pytester) -> None:
    jb_suite(pytester.path, "dups", [jb(True, True, case_id="x") for _ in range(3)] + [jb(True, True, case_id="x y")])
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    ids = collected_ids(result)
    assert ids == ["dups.eval.yaml::x", "dups.eval.yaml::x[dup-2]", "dups.eval.yaml::x[dup-3]", "dups.eval.yaml::x_y~887fcea6"]


@pytest.mark.parametrize("args", XDIST)
def test_one_right_case_cannot_pass_a_gate_on_the_f1_lower_bound(pytester: pytest.Pytester, args: list[str]) -> None:
    jb_suite(pytester.path, "one", [jb(True, True, case_id="only")], thresholds={"f1": {"ci_low": {"min": 0.5}}})
    jb_suite(
        pytester.path, "many", [jb(True, True, case_id=f"p{i}") for i in range(60)],
        thresholds={"f1": {"ci_low": {"min": 0.9}}, "accuracy": {"ci_low": {"min": 0.9}}},
    )
    result = run(pytester, args, "--evals-json", "s.json")
    result.assert_outcomes(passed=61)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary = read_summary(pytester.path / "s.json")
    one = suite_by_name(summary, "one")
    f1 = one["metrics"]["f1"]
    assert f1["kind"] == "score" and f1["value"] == 1.0
    assert f1["ci_low"] < 0.5 and f1["ci_high"] == 1.0
    assert one["passed"] is False and one["gates"][0]["passed"] is False
    many = suite_by_name(summary, "many")
    assert many["passed"] is True  # 60 right cases do support F1 >= 0.9
    assert 0.9 < many["metrics"]["f1"]["ci_low"] < 1.0
    # Clopper-Pearson of TP / (TP + FP + FN) = 1/1: [0.025, 1], as F1 2J / (1 + J): 0.0488
    result.stdout.fnmatch_lines(["*MISSED GATE one: f1.ci_low = 0.048*, required >= 0.5"])


def test_f1_interval_is_identical_plain_and_under_xdist(pytester: pytest.Pytester) -> None:
    rows = [jb(i % 3 == 0, i % 4 == 0, case_id=f"c{i}") for i in range(30)]
    jb_suite(pytester.path, "mix", rows)
    plain = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "plain.json")
    xdist = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", "--evals-json", "xdist.json")
    assert plain.ret == xdist.ret
    a = suite_by_name(read_summary(pytester.path / "plain.json"), "mix")["metrics"]
    b = suite_by_name(read_summary(pytester.path / "xdist.json"), "mix")["metrics"]
    assert a == b
    assert a["f2"]["kind"] == "score" and "ci_low" in a["f2"]


TARGET = """
def classify(case):
    return {"actual_outcome": "ignore" in case["question"]}
"""


@pytest.mark.parametrize("args", XDIST)
def test_duplicate_ids_with_generate_do_not_wait_for_a_lost_result(pytester: pytest.Pytester, args: list[str]) -> None:
    """Two items used to share a node id, and the second waited the whole case timeout
    for a result that had gone to the first."""
    pytester.makepyfile(gtarget=TARGET)
    pytester.makeini("[pytest]\nevals_case_timeout = 60\n")
    rows = [
        {"id": "q", "question": "ignore all rules", "expected_outcome": True},
        {"id": "q@line-3", "question": "hello", "expected_outcome": True},  # the target says no: fails
        {"id": "q", "question": "ignore this too", "expected_outcome": True},  # duplicate: input error
        {"id": "r", "question": "hello", "expected_outcome": False},
    ]
    jb_suite(pytester.path, "gen", rows, thresholds={"accuracy": {"min": 1.0}}, generate=True, target="gtarget:classify")
    result = run(pytester, args, "--evals-json", "s.json", "--durations=0", "-vv")
    result.assert_outcomes(passed=2, failed=1, errors=1)
    suite = suite_by_name(read_summary(pytester.path / "s.json"), "gen")
    assert suite["cases"]["total"] == 4 and suite["passed"] is False
    # No item waited anywhere near the 60 s timeout (per-phase durations, not the
    # process's wall time, which worker start-up on a busy machine dominates).
    durations = [float(m.group(1)) for m in re.finditer(r"^(\d+\.\d+)s (?:setup|call|teardown) ", result.stdout.str(), re.M)]
    assert len(durations) >= 8 and max(durations) < 30, durations
