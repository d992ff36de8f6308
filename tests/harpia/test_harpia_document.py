"""Reading HarpIA input files: accepted spellings and a clear error for each bad file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.families.harpia.document import load_document, validate_instance
from pytest_evals.model.errors import CaseInputError, SuiteConfigError

BLEU = {"id": "bleu", "enable": True, "parameters": {}}


def write(tmp_path: Path, data: Any, raw: str | None = None) -> Path:
    path = tmp_path / "in.harpia.json"
    path.write_text(raw if raw is not None else json.dumps(data), encoding="utf-8")
    return path


def test_spellings_of_keys_are_forgiving(tmp_path: Path) -> None:
    path = write(tmp_path, {
        "Instances": [{"ID": 1, "Input": "x", "actual_output": "a b", "Expected Output": "a b"}],
        "metrics": [{"id": "bleu", "enabled": True, "params": {"weights": [1.0]}},
                    {"id": "chrf", "enable": False}],
    })
    doc = load_document(path)
    assert [s.id for s in doc.specs] == ["bleu"] and doc.specs[0].parameters == {"weights": [1.0]}
    assert [d.id for d in doc.disabled] == ["chrf"]
    inst = validate_instance(doc.instances[0], "in#1", need_output=True, need_references=["bleu"])
    assert (inst.id, inst.actual_output, inst.expected_output) == ("1", "a b", ["a b"])
    assert inst.model_dump(by_alias=True)["actual-output"] == "a b"


@pytest.mark.parametrize(
    ("raw", "data", "fragments"),
    [
        ("", None, ["the file is empty"]),
        ('{"instances": [}', None, [":1: invalid JSON"]),
        (None, [1, 2], ["expected a JSON object with 'instances' and 'metrics'", "list"]),
        (None, {"metrics": [BLEU]}, ["missing field 'instances'"]),
        (None, {"instances": {"a": 1}, "metrics": [BLEU]}, ["field 'instances' must be a list"]),
        (None, {"instances": [], "metrics": [BLEU]}, ["'instances' is empty"]),
        (None, {"instances": [{}], "metrics": []}, ["no enabled metric"]),
        (None, {"instances": [{}], "metrics": [{"id": "bleu", "enable": False}]}, ["no enabled metric"]),
        (None, {"instances": [{}], "metrics": [{"id": "blue"}]}, ["metrics[0] (id 'blue')", "unknown metric id", "bertscore"]),
        (None, {"instances": [{}], "metrics": [{"id": "bleu", "parameters": {"n": 4}}]},
         ["metrics[0] (id 'bleu')", "unknown parameter 'n'", "weights, smoothing_function, smoothing, auto_reweigh"]),
        (None, {"instances": [{}], "metrics": [{"enable": True}]}, ["metrics[0]", "field 'id'", "required"]),
        (None, {"instances": [{}], "metrics": [{"id": "bleu", "enable": "perhaps"}]}, ["field 'enable'"]),
        (None, {"instances": [{}], "metrics": ["bleu"]}, ["metrics[0]: expected an object"]),
        (None, {"instances": [{}], "metrics": [BLEU, BLEU]}, ["metrics[1] (id 'bleu')", "distinct 'name'"]),
        (None, {"instances": [{}], "metrics": [{"id": "chrf", "name": "errors"}]}, ["name 'errors' is reserved"]),
        (None, {"instances": [{}], "metrics": [{"id": "chrf", "name": "chr.f"}]}, ["name 'chr.f' may only contain"]),
        (None, {"instances": [{}], "metrics": [{"id": "rouge", "parameters": {"rouge_types": ["rouge0"]}}]},
         ["metrics[0] (id 'rouge')", "parameter 'rouge_types'"]),
    ],
)
def test_bad_files_have_clear_errors(tmp_path: Path, raw: str | None, data: Any, fragments: list[str]) -> None:
    path = write(tmp_path, data, raw)
    with pytest.raises(SuiteConfigError) as info:
        load_document(path, "in.harpia.json")
    message = str(info.value)
    assert message.startswith("in.harpia.json")
    for fragment in fragments:
        assert fragment in message, message


def test_several_metric_problems_are_reported_together(tmp_path: Path) -> None:
    path = write(tmp_path, {"instances": [{}], "metrics": [{"id": "blue"}, {"id": "ter", "parameters": {"x": 1}}]})
    with pytest.raises(SuiteConfigError) as info:
        load_document(path)
    assert "metrics[0] (id 'blue')" in str(info.value) and "metrics[1] (id 'ter')" in str(info.value)


def test_not_utf8_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "x.harpia.json"
    path.write_bytes(b'{"instances": ["\xff"]}')
    with pytest.raises(SuiteConfigError, match="not UTF-8"):
        load_document(path)
    with pytest.raises(SuiteConfigError, match="not found"):
        load_document(tmp_path / "nope.harpia.json")


@pytest.mark.parametrize(
    ("instance", "kwargs", "fragments"),
    [
        ({"id": "x", "expected-output": ["a"]}, {}, ["file#x", "'actual-output' is missing", "generate: true"]),
        ({"id": "x", "actual-output": "a", "expected-output": []}, {}, ["'expected-output' has no reference", "bleu"]),
        ({"id": "x", "actual-output": "a"}, {}, ["'expected-output' has no reference"]),
        ({"id": "x", "actual-output": 3, "expected-output": ["a"]}, {}, ["field 'actual-output'", "string"]),
        ({"id": "x", "actual-output": "a", "expected-output": ["a", 5]}, {}, ["field 'expected-output.1'"]),
        ({"id": "", "actual-output": "a", "expected-output": ["a"]}, {}, ["field 'id'", "empty"]),
        ("just text", {}, ["must be a JSON object"]),
    ],
)
def test_instance_errors_name_the_instance_and_field(instance: Any, kwargs: dict, fragments: list[str]) -> None:
    with pytest.raises(CaseInputError) as info:
        validate_instance(instance, "file#x", need_output=True, need_references=["bleu"], **kwargs)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_unsupervised_metrics_need_no_reference_and_generate_needs_no_output() -> None:
    inst = validate_instance({"id": "x", "input": "hi"}, "f#x", need_output=False, need_references=[])
    assert inst.actual_output is None and inst.expected_output == []
