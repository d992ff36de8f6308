"""Answers and assertions an attacker chose: a regex that backtracks catastrophically is
that case's ERROR within its time limit, patterns Python cannot compile name their field,
and JSON checks follow JSON's types (true is not 1; NaN is not JSON)."""

from __future__ import annotations

import pytest

from .conftest import read_json, suite_summary, write_suite


def _run(pytester: pytest.Pytester) -> tuple[pytest.RunResult, dict[str, str]]:
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json", "-o", "evals_case_timeout=30")
    suite = suite_summary(read_json(pytester.path / "s.json"))
    return result, {r["case_id"]: r["status"] for r in suite["case_results"]}


def test_a_catastrophic_regex_is_that_cases_error_and_the_run_goes_on(pytester: pytest.Pytester) -> None:
    cases = [{"id": "slow", "output": "a" * 40 + "b"}, {"id": "fine", "output": "aaaa"}]
    write_suite(pytester.path, cases, asserts=[{"type": "regex", "value": "^(a|aa)+$"}])
    result, statuses = _run(pytester)
    assert statuses == {"slow": "error", "fine": "passed"}
    result.stdout.fnmatch_lines(["*answers.jsonl:1*field 'value': the regular expression*took over 1 s*"])
    assert result.ret == 1


@pytest.mark.parametrize("pattern", ["(" * 5000 + ")" * 5000, "a{4294967296}"])
def test_patterns_python_cannot_compile_name_their_field(pytester: pytest.Pytester, pattern: str) -> None:
    cases = [{"id": "c1", "output": "x", "assert": [{"type": "regex", "value": pattern}]}, {"id": "c2", "output": "y"}]
    write_suite(pytester.path, cases, asserts=[{"type": "length", "min": 1}])
    result, statuses = _run(pytester)
    assert statuses == {"c1": "error", "c2": "passed"}
    result.stdout.fnmatch_lines(["*answers.jsonl:1*assert[[]0[]].value*invalid regular expression*"])
    assert "RecursionError" not in result.stdout.str().split("invalid regular expression")[0][-200:]


def test_json_checks_follow_jsons_types(pytester: pytest.Pytester) -> None:
    cases = [
        {"id": "bool-vs-1", "output": "true", "assert": [{"type": "equals", "value": 1}]},
        {"id": "0-vs-false", "output": "0", "assert": [{"type": "equals", "value": False}]},
        {"id": "nested", "output": '{"ok": 1}', "assert": [{"type": "equals", "value": {"ok": True}}]},
        {"id": "one-point-oh", "output": "[1.0]", "assert": [{"type": "equals", "value": [1]}]},
        {"id": "nan", "output": "NaN", "assert": [{"type": "is_json"}]},
        {"id": "infinity", "output": '{"a": Infinity}', "assert": [{"type": "is_json"}]},
        {"id": "schema-nan", "output": '{"a": NaN}',
         "assert": [{"type": "json_schema", "schema": {"type": "object", "properties": {"a": {"type": "number"}}}}]},
        {"id": "true-true", "output": "true", "assert": [{"type": "equals", "value": True}]},
    ]
    write_suite(pytester.path, cases)
    _result, statuses = _run(pytester)
    assert statuses == {
        "bool-vs-1": "failed", "0-vs-false": "failed", "nested": "failed", "one-point-oh": "passed",
        "nan": "failed", "infinity": "failed", "schema-nan": "failed", "true-true": "passed",
    }
