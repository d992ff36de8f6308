"""Case outcomes are JSON booleans: a quoted or numeric label is that case's error (file,
line, field), never a boolean guessed by pydantic's lax mode ("yes" -> True, 0 -> False)."""

from __future__ import annotations

import json

import pytest
from core_helpers import read_summary, suite_by_name, write_suite


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_non_boolean_outcome_is_an_error_naming_file_line_and_field(pytester: pytest.Pytester, workers: list[str]) -> None:
    rows = [
        {"id": "ok", "question": "q", "expected_outcome": False, "actual_outcome": False},
        {"id": "quoted", "question": "q", "expected_outcome": "false", "actual_outcome": False},
        {"id": "yes", "question": "q", "expected_outcome": True, "actual_outcome": "yes"},
        {"id": "one", "question": "q", "expected_outcome": 1, "actual_outcome": True},
        {"id": "zero", "question": "q", "expected_outcome": False, "actual_outcome": 0},
    ]
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "jb.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    write_suite(pytester.path, "jb.eval.yaml", task="jailbreak_guardrails", input_path="data/jb.jsonl")
    og = [
        {"id": "og-ok", "message": "m", "expected_triggered": True, "actual_triggered": True},
        {"id": "og-bad", "message": "m", "expected_triggered": True, "actual_triggered": True,
         "expected_guardrails": {"political": "no"}},
    ]
    (pytester.path / "data" / "og.jsonl").write_text("".join(json.dumps(r) + "\n" for r in og), encoding="utf-8")
    write_suite(pytester.path, "og.eval.yaml", task="output_guardrails", input_path="data/og.jsonl")
    result = (pytester.runpytest_subprocess if workers else pytester.runpytest)(
        *workers, "-p", "no:cacheprovider", "--evals-json", "s.json"
    )
    result.assert_outcomes(passed=2, errors=5)
    result.stdout.fnmatch_lines_random([
        "*data/jb.jsonl:2: field 'expected_outcome': Input should be a valid boolean*",
        "*data/jb.jsonl:3: field 'actual_outcome': Input should be a valid boolean*",
        "*data/jb.jsonl:4: field 'expected_outcome': Input should be a valid boolean*",
        "*data/jb.jsonl:5: field 'actual_outcome': Input should be a valid boolean*",
        "*data/og.jsonl:2: field 'expected_guardrails.political': Input should be a valid boolean*",
    ])
    summary = read_summary(pytester.path / "s.json")
    jb = suite_by_name(summary, "jb")
    assert jb["cases"]["errors_by_kind"] == {"input": 4}
    assert jb["metrics"]["tn"]["value"] == 1 and jb["metrics"]["tp"]["value"] == 0  # nothing guessed into the counts
