"""Malformed assertions: a suite-level one is one suite ERROR naming the file, the line
and the field (other suites run); a case's own is that case's ERROR (other cases run);
a missing reference is the case's ERROR naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import read_json, suite_summary, write_suite

GOOD = [{"id": "a", "output": "hello there", "reference": "hello there"}, {"id": "b", "output": "bye"}]


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"type": "regex", "value": "(["}, "assert[1].value"),
        ({"type": "json_schema", "schema": {"type": 12}}, "assert[1].schema"),
        ({"type": "containz", "value": "x"}, "assert[1].type"),
        ({"type": "contains", "value": ["x"]}, "assert[1].value"),
        ({"type": "length", "max": "10"}, "assert[1].max"),
    ],
    ids=["bad-regex", "bad-schema", "unknown-type", "wrong-type", "quoted-number"],
)
def test_a_malformed_suite_assertion_is_one_suite_error(pytester: pytest.Pytester, entry: Any, field: str) -> None:
    write_suite(pytester.path, GOOD, name="broken", asserts=[{"type": "contains", "value": "h"}, entry])
    write_suite(pytester.path, GOOD, name="fine", asserts=[{"type": "icontains", "value": "e"}])
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    summary = read_json(pytester.path / "s.json")
    broken = suite_summary(summary, "broken")
    assert broken["passed"] is False and broken["cases"]["errors"] == 1
    message = " ".join(broken["problems"])
    # The entry is the second item of the list: its type on line 6, its other keys on 7.
    line = 6 if field.endswith(".type") else 7
    assert f"broken.eval.yaml:{line}: field {field!r}" in message, message
    fine = suite_summary(summary, "fine")
    assert fine["passed"] is True and fine["cases"]["total"] == 2
    result.assert_outcomes(passed=2, errors=1)


def test_a_malformed_custom_metric_names_its_line(pytester: pytest.Pytester) -> None:
    write_suite(pytester.path, GOOD, asserts=[{"type": "contains", "value": "h"}],
                metrics=[{"name": "politeness", "criteria": "polite", "scale": [1, 5], "threshold": 9}])
    pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    message = " ".join(suite_summary(read_json(pytester.path / "s.json"))["problems"])
    lines = (pytester.path / "answers.eval.yaml").read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "threshold: 9" in text)
    assert f"answers.eval.yaml:{line}: field 'metrics[0].threshold': threshold 9 is outside the scale [1, 5]" in message


def test_a_case_assertion_error_is_that_case_only(pytester: pytest.Pytester) -> None:
    cases = [
        {"id": "ok", "output": "hello"},
        {"id": "bad-regex", "output": "hello", "assert": [{"type": "regex", "value": "a{2,1}"}]},
        {"id": "bad-schema", "output": "{}", "assert": [{"type": "json_schema", "schema": {"required": "x"}}]},
        {"id": "unknown", "output": "hello", "assert": [{"type": "is_xml"}]},
        {"id": "not-a-list", "output": "hello", "assert": {"type": "contains", "value": "h"}},
        {"id": "no-output", "answer_text": "hello"},
    ]
    write_suite(pytester.path, cases, asserts=[{"type": "contains", "value": "h"}])
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    suite = suite_summary(read_json(pytester.path / "s.json"))
    by_id = {r["case_id"]: r for r in suite["case_results"]}
    assert by_id["ok"]["status"] == "passed"
    assert "answers.jsonl:2: field 'assert[0].value': invalid regular expression" in by_id["bad-regex"]["message"]
    assert "answers.jsonl:3: field 'assert[0].schema': invalid JSON Schema" in by_id["bad-schema"]["message"]
    assert "answers.jsonl:4: field 'assert[0].type': unknown assertion type 'is_xml'" in by_id["unknown"]["message"]
    assert "answers.jsonl:5: field 'assert': expected a list" in by_id["not-a-list"]["message"]
    assert "answers.jsonl:6: field 'output': required" in by_id["no-output"]["message"]
    assert suite["cases"]["errors_by_kind"] == {"input": 5}
    result.assert_outcomes(passed=1, errors=5)


def test_a_missing_reference_is_the_case_error_naming_the_field(pytester: pytest.Pytester) -> None:
    cases = [{"id": "has", "output": "the cat sat", "reference": "the cat sat"},
             {"id": "lacks", "output": "the cat sat"},
             {"id": "empty", "output": "the cat sat", "references": []}]
    write_suite(pytester.path, cases, asserts=[{"type": "exact_match"}, {"type": "contains", "value": "cat"}])
    pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    by_id = {r["case_id"]: r for r in suite_summary(read_json(pytester.path / "s.json"))["case_results"]}
    assert by_id["has"]["status"] == "passed"
    assert by_id["lacks"]["status"] == "error"
    assert "answers.jsonl:2: field 'references': assertion 'exact_match' compares with the case's reference" in by_id["lacks"]["message"]
    assert "answers.jsonl:3: field 'references'" in by_id["empty"]["message"]


def test_a_case_with_no_assertions_at_all_is_an_error(pytester: pytest.Pytester) -> None:
    write_suite(pytester.path, [{"id": "a", "output": "x"}, {"id": "b", "output": "x", "assert": [{"type": "contains", "value": "x"}]}])
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*answers.jsonl:1: field 'assert': the case has no assertions*"])
