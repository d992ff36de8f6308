"""Values nested deeper than ``evals_max_json_depth`` are refused where they are read: in
any suite field (an unused one too) and in a baseline run (issue 30, attack 2).

A suite field nested 260 deep used to pass validation and crash the controller at the end
("Maximum serialization depth exceeded": no JSON summary, JUnit or run folder for any
suite); a baseline nested 5,000 deep raised RecursionError. Now each is an error naming
the file and the field (or line), the other suites are measured and every artifact is
written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evals.hardening import input_limits
from pytest_evals.suites.value_depth import too_deep_field

CASE = '{"id": "a", "question": "q", "expected_outcome": true, "actual_outcome": true}\n'


def nested(depth: int) -> str:
    """A JSON (and YAML flow) value of ``depth`` nested mappings."""
    return '{"k": ' * depth + '"x"' + "}" * depth


def build(root: Path) -> None:
    (root / "q.jsonl").write_text(CASE, encoding="utf-8")
    (root / "good.eval.yaml").write_text("task: jailbreak_guardrails\ninput_path: q.jsonl\n", encoding="utf-8")
    # ``target`` is unused by a generate: false suite; a metric's extra keys are free-form
    (root / "target.eval.yaml").write_text(
        f"task: jailbreak_guardrails\ninput_path: q.jsonl\ntarget: {nested(260)}\n", encoding="utf-8"
    )
    (root / "metric.eval.yaml").write_text(
        f"task: jailbreak_guardrails\ninput_path: q.jsonl\nmetrics:\n  - name: m\n    extra: [{nested(200)}]\n",
        encoding="utf-8",
    )


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_deep_suite_fields_are_one_suite_error_and_every_artifact_is_written(pytester: pytest.Pytester, xdist: bool) -> None:
    build(pytester.path)
    summary = pytester.path / "out.json"
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "--evals-json", str(summary), "--junitxml", str(junit), "--evals-report-dir", "runs",
        *(["-n", "2"] if xdist else []),
    )
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert "Maximum serialization depth" not in out + result.stderr.str()
    result.assert_outcomes(passed=1, errors=2)
    doc = json.loads(summary.read_text(encoding="utf-8"))
    suites = {s["suite"]: s for s in doc["suites"]}
    assert suites["good.eval.yaml"]["passed"] is True
    target = " ".join(suites["target.eval.yaml"]["problems"])
    assert "target.eval.yaml: field 'target.k.k.k...': nested 261 levels deep, over the limit of 128" in target
    metric = " ".join(suites["metric.eval.yaml"]["problems"])
    assert "metric.eval.yaml: field 'metrics[0].extra[0]...': nested 204 levels deep" in metric
    assert "evals.good.passed" in junit.read_text(encoding="utf-8")
    (run,) = (pytester.path / "runs").iterdir()
    for name in ("summary.json", "results.jsonl", "manifest.json", "good/results.csv"):
        assert (run / name).is_file(), name


def test_a_deep_override_is_a_suite_error(pytester: pytest.Pytester) -> None:
    build(pytester.path)
    result = pytester.runpytest_subprocess("good.eval.yaml", "--evals-set", f"good:target={nested(300)}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*good.eval.yaml: field 'target.k.k.k...': nested 301 levels deep*"])


def test_the_limit_is_the_ini_key_up_to_what_the_summary_can_hold(pytester: pytest.Pytester) -> None:
    build(pytester.path)
    pytester.makeini("[pytest]\nevals_max_json_depth = 100\n")
    result = pytester.runpytest_subprocess("metric.eval.yaml", "good.eval.yaml")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*nested 204 levels deep, over the limit of 100 (ini evals_max_json_depth)*"])
    # a larger ini limit cannot let a suite past what its JSON entry can serialize
    pytester.makeini("[pytest]\nevals_max_json_depth = 1000\n")
    result = pytester.runpytest_subprocess("target.eval.yaml", "good.eval.yaml")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*nested 261 levels deep, over the limit of 200 (the most a suite's values may nest)*"])
    assert "Maximum serialization depth" not in result.stdout.str() + result.stderr.str()


def test_depth_is_counted_like_json() -> None:
    assert too_deep_field({"a": 1, "b": {"c": [1, 2]}}, 3) is None
    assert too_deep_field({"b": {"c": [1, 2]}}, 2) == ("b.c", 3)
    wide = {f"k{i}": {"x": i} for i in range(10_000)}
    assert too_deep_field(wide, 2) is None
    chain: dict[str, object] = {}
    node = chain
    for _ in range(50_000):  # far past the interpreter's recursion limit
        node["n"] = {}
        node = node["n"]  # type: ignore[assignment]
    found = too_deep_field(chain, input_limits.DEFAULT_MAX_DEPTH)
    assert found is not None and found[0] == "n.n.n.n..." and found[1] >= input_limits.DEFAULT_MAX_DEPTH


def baseline_line(depth: int) -> str:
    deep = "[" * depth + '"x"' + "]" * depth
    return (
        '{"suite": "good.eval.yaml", "task": "jailbreak_guardrails", "case_id": "a", "status": "passed", '
        f'"scores": {{}}, "data": {{"d": {deep}}}, "details": {{}}, "message": null}}\n'
    )


@pytest.mark.parametrize("depth", [300, 5000, 100_000])
@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_a_deep_baseline_is_a_problem_naming_file_and_line(pytester: pytest.Pytester, depth: int, xdist: bool) -> None:
    if xdist and depth != 5000:
        pytest.skip("one depth is enough under -n 2")
    build(pytester.path)
    (pytester.path / "base.jsonl").write_text(baseline_line(depth), encoding="utf-8")
    summary = pytester.path / "out.json"
    result = pytester.runpytest_subprocess(
        "good.eval.yaml", "--evals-baseline", "base.jsonl", "--evals-json", str(summary), *(["-n", "2"] if xdist else [])
    )
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert "RecursionError" not in out + result.stderr.str()
    result.stdout.fnmatch_lines([f"*base.jsonl:1: JSON nested {depth + 2} levels deep, over the limit of 128*"])
    doc = json.loads(summary.read_text(encoding="utf-8"))
    assert doc["passed"] is False and doc["exit_status"] == 1


def test_a_deep_baseline_summary_is_refused(pytester: pytest.Pytester) -> None:
    build(pytester.path)
    deep = "[" * 5000 + "]" * 5000
    (pytester.path / "base.json").write_text('{"suites": [{"suite": "good.eval.yaml", "settings": ' + deep + "}]}")
    result = pytester.runpytest_subprocess("good.eval.yaml", "--evals-baseline", "base.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*base.json: JSON nested 5003 levels deep*"])


def test_rescore_and_compare_refuse_a_deep_run_folder(pytester: pytest.Pytester) -> None:
    import subprocess
    import sys

    build(pytester.path)
    result = pytester.runpytest_subprocess("good.eval.yaml", "--evals-report-dir", "runs")
    assert result.ret == pytest.ExitCode.OK
    (folder,) = (pytester.path / "runs").iterdir()
    results = folder / "results.jsonl"
    results.write_text(results.read_text(encoding="utf-8") + baseline_line(5000), encoding="utf-8")
    cli = [sys.executable, "-m", "pytest_evals.cli.main"]
    rescore = subprocess.run([*cli, "rescore", str(folder)], capture_output=True, text=True)
    assert rescore.returncode == 2, rescore.stderr
    assert "RecursionError" not in rescore.stderr
    assert f"rescore: {results}:2: JSON nested 5002 levels deep, over the limit of 128" in rescore.stderr
    compare = subprocess.run([*cli, "compare", str(folder), str(folder)], capture_output=True, text=True)
    assert "RecursionError" not in compare.stderr + compare.stdout
    assert f"{results}:2: JSON nested 5002 levels deep" in compare.stderr + compare.stdout
