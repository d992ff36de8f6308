"""Every deterministic type on answers that pass and answers that fail, checked in process."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest

from pytest_evals.families.assertions.assertion_outcome import CaseView
from pytest_evals.families.assertions.assertion_spec import SpecError, parse_list, parse_one


def check(spec: dict[str, Any], output: str) -> bool:
    item = parse_one(spec, "assert[0]")
    assert item.kind == "deterministic"
    outcome = item.runner(CaseView(output=output, source="x.jsonl:1"))
    assert outcome.score == (1.0 if outcome.passed else 0.0)
    return bool(outcome.passed)


@pytest.mark.parametrize(
    ("spec", "output", "expected"),
    [
        ({"type": "equals", "value": "Paris"}, " Paris\n", True),
        ({"type": "equals", "value": "Paris"}, "paris", False),
        ({"type": "equals", "value": "Paris", "ignore_case": True}, "paris", True),
        ({"type": "equals", "value": {"a": 1}}, '{"a": 1}', True),
        ({"type": "equals", "value": {"a": 1}}, '{"a": 2}', False),
        ({"type": "contains", "value": "refund"}, "Your refund is on its way", True),
        ({"type": "contains", "value": "Refund"}, "Your refund is on its way", False),
        ({"type": "icontains", "value": "REFUND"}, "Your refund is on its way", True),
        ({"type": "not_contains", "value": "sorry"}, "Here you go", True),
        ({"type": "not_contains", "value": "sorry"}, "so sorry", False),
        ({"type": "not_icontains", "value": "SORRY"}, "so sorry", False),
        ({"type": "contains_any", "value": ["a1", "b2"]}, "has b2", True),
        ({"type": "contains_any", "value": ["a1", "b2"]}, "has B2", False),
        ({"type": "icontains_any", "value": ["a1", "b2"]}, "has B2", True),
        ({"type": "contains_all", "value": ["a1", "b2"]}, "a1 and b2", True),
        ({"type": "contains_all", "value": ["a1", "b2"]}, "a1 only", False),
        ({"type": "icontains_all", "value": ["A1", "B2"]}, "a1 and b2", True),
        ({"type": "not_contains_any", "value": ["x", "y"]}, "abc", True),
        ({"type": "not_icontains_any", "value": ["X", "y"]}, "axc", False),
        ({"type": "regex", "value": r"\d{3}-\d{4}"}, "call 555-1234", True),
        ({"type": "regex", "value": r"^\d+$"}, "12a", False),
        ({"type": "regex", "value": "hello", "ignore_case": True}, "HELLO", True),
        ({"type": "starts_with", "value": "Yes"}, "  Yes, we do.", True),
        ({"type": "starts_with", "value": "Yes"}, "No.", False),
        ({"type": "is_json"}, '{"a": [1, 2]}', True),
        ({"type": "is_json"}, "{'a': 1}", False),
        ({"type": "numeric", "value": 3.14, "tolerance": 0.01}, " 3.141 ", True),
        ({"type": "numeric", "value": 3.14, "tolerance": 0.0001}, "3.141", False),
        ({"type": "numeric", "value": 2}, "two", False),
        ({"type": "length", "max": 5}, "12345", True),
        ({"type": "length", "max": 5}, "123456", False),
        ({"type": "length", "unit": "words", "min": 2, "max": 3}, "one two three", True),
        ({"type": "length", "unit": "words", "min": 2}, "one", False),
    ],
)
def test_deterministic_types(spec: dict[str, Any], output: str, expected: bool) -> None:
    assert check(spec, output) is expected


SCHEMA = {
    "type": "object",
    "properties": {"ticket": {"type": "string", "pattern": "^T-\\d+$"}, "priority": {"enum": ["low", "high"]}},
    "required": ["ticket", "priority"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "output",
    [
        '{"ticket": "T-12", "priority": "low"}',
        '{"ticket": "T-12"}',
        '{"ticket": "12", "priority": "high"}',
        '{"ticket": "T-1", "priority": "urgent", "x": 1}',
        '["T-1"]',
        "not json",
    ],
)
def test_json_schema_agrees_with_jsonschema(output: str) -> None:
    try:
        jsonschema.validate(json.loads(output), SCHEMA)
        valid = True
    except (ValueError, jsonschema.ValidationError):
        valid = False
    assert check({"type": "json_schema", "schema": SCHEMA}, output) is valid


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        ({"type": "regex", "value": "(unclosed"}, "assert[0].value", "invalid regular expression"),
        ({"type": "json_schema", "schema": {"type": "nonsense"}}, "assert[0].schema", "invalid JSON Schema"),
        ({"type": "json_schema", "schema": {"minLength": "3"}}, "assert[0].schema", "invalid JSON Schema"),
        ({"type": "contains", "value": 3}, "assert[0].value", "valid string"),
        ({"type": "contains", "value": "a", "valeu": "b"}, "assert[0].valeu", "unknown key"),
        ({"type": "contains_any", "value": "a"}, "assert[0].value", "valid list"),
        ({"type": "contains", "value": "a", "weight": "2"}, "assert[0].weight", "valid number"),
        ({"type": "contains", "value": "a", "weight": -1}, "assert[0].weight", "greater than or equal"),
        ({"type": "nonsense"}, "assert[0].type", "unknown assertion type 'nonsense'"),
        ({"value": "x"}, "assert[0].type", "required"),
        ({"type": "length"}, "assert[0].min", "give min, max or both"),
        ({"type": "length", "unit": "lines", "max": 3}, "assert[0].unit", "'chars' or 'words'"),
        ({"type": "bleu"}, "assert[0].threshold", "needs a threshold"),
        ({"type": "bleu", "threshold": 0.3, "weigths": [1]}, "assert[0].weigths", "unknown parameter"),
        ({"type": "llm_rubric"}, "assert[0].criteria", "criteria"),
        ({"type": "g_eval", "criteria": "c", "scale": [5, 1]}, "assert[0].scale", "lowest < highest"),
        ({"type": "g_eval", "criteria": "c", "scale": [1, 5], "threshold": 7}, "assert[0].threshold", "outside the scale"),
        ({"type": "factuality", "scores": {"wrong": 1}}, "assert[0].scores.wrong", "Input should be"),
        ({"type": "llm_rubric", "criteria": "c", "judge": {"n_runs": 0}}, "assert[0].judge.n_runs", "greater than"),
        ({"type": "latency"}, "assert[0].max", "Field required"),
        ("contains", "assert[0]", "must be a mapping"),
        ({"type": "numeric", "value": 1, "tolerance": float("inf")}, "assert[0].tolerance", "finite"),
        ({"type": "contains", "value": "a", "weight": float("nan")}, "assert[0].weight", "finite"),
        ({"type": "numeric", "value": float("nan")}, "assert[0].value", "finite"),
    ],
)
def test_malformed_assertions_name_the_field(spec: Any, field: str, words: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_one(spec, "assert[0]")
    assert info.value.field == field
    assert re.search(re.escape(words), str(info.value), re.IGNORECASE), str(info.value)


def test_names_default_to_the_type_numbered_and_explicit_duplicates_are_errors() -> None:
    taken: set[str] = set()
    items = parse_list([{"type": "contains", "value": "a"}, {"type": "contains", "value": "b"},
                        {"type": "regex", "value": "x", "name": "code"}], "assert", taken)
    assert [i.name for i in items] == ["contains", "contains-2", "code"]
    with pytest.raises(SpecError, match="duplicate name 'code'") as info:
        parse_list([{"type": "contains", "value": "a", "name": "code"}], "assert", taken)
    assert info.value.field == "assert[0].name"
    with pytest.raises(SpecError, match="reserved"):
        parse_list([{"type": "contains", "value": "a", "name": "pass_rate"}], "assert", set())


def test_a_named_judged_assertion_is_a_custom_metric() -> None:
    [named, plain] = parse_list([{"type": "llm_rubric", "criteria": "polite", "name": "politeness"},
                                 {"type": "llm_rubric", "criteria": "brief"}], "assert", set())
    assert named.custom and not plain.custom


def test_a_schema_reference_is_never_fetched() -> None:
    from pytest_evals.model.errors import CaseInputError

    item = parse_one({"type": "json_schema", "schema": {"$ref": "https://example.com/s.json"}}, "assert[0]")
    with pytest.raises(CaseInputError, match=r"x.jsonl:1: field 'schema': cannot resolve 'https://example.com/s.json'"):
        item.runner(CaseView(output="{}", source="x.jsonl:1"))
    local = {"$defs": {"n": {"type": "integer"}}, "properties": {"x": {"$ref": "#/$defs/n"}}}
    assert check({"type": "json_schema", "schema": local}, '{"x": 1}') is True
    assert check({"type": "json_schema", "schema": local}, '{"x": "1"}') is False
