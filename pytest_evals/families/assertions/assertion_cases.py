"""One case of an assertions suite: its answer, question, reference(s), own assertions.

The answer is read from ``output`` (or ``answer``, ``response``, ``llm_answer``; the
suite's ``output_field`` names another), the question from ``input`` (or ``question``,
``prompt``; ``input_field``), the reference from ``references`` (a list) or
``reference`` (or ``ideal_answer``, ``expected``; ``reference_field``). A case's own
``assert`` list adds to the suite's; its malformed entries make this case an ERROR
naming the line and the field, and the other cases run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pytest_evals.families.assertions.assertion_outcome import CaseView
from pytest_evals.families.assertions.assertion_spec import Assertion, SpecError, parse_list
from pytest_evals.families.assertions.config import AssertionsConfig
from pytest_evals.model.errors import CaseInputError

OUTPUT_FIELDS = ("output", "answer", "response", "llm_answer")
INPUT_FIELDS = ("input", "question", "prompt")
REFERENCE_FIELDS = ("references", "reference", "ideal_answer", "expected")


@dataclass
class AssertionCase:
    record: dict[str, Any]
    source: str
    output: str | None
    input: str | None
    references: list[str]
    reference_field: str
    asserts: list[Assertion] = field(default_factory=list)
    usage: dict[str, Any] | None = None

    def view(self) -> CaseView:
        return CaseView(
            output=self.output or "",
            source=self.source,
            input=self.input,
            references=self.references,
            usage=self.usage,
            reference_field=self.reference_field,
        )


def as_text(value: Any) -> str:
    """An output that is not text (a JSON object, a number) as its JSON text."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _first(record: dict[str, Any], chosen: str | None, names: tuple[str, ...]) -> tuple[str, Any]:
    if chosen is not None:
        return chosen, record.get(chosen)
    for name in names:
        if record.get(name) is not None:
            return name, record[name]
    return names[0], None


def _references(record: dict[str, Any], config: AssertionsConfig, source: str) -> tuple[str, list[str]]:
    name, value = _first(record, config.reference_field, REFERENCE_FIELDS)
    if value is None:
        return name, []
    items = value if isinstance(value, list) else [value]
    if not items:
        return name, []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            where = f"{name}[{i}]" if isinstance(value, list) else name
            raise CaseInputError(f"{source}: field {where!r}: a reference must be text, got {type(item).__name__}")
    return name, list(items)


def read_case(
    record: Any, source: str, config: AssertionsConfig, suite_names: set[str], generating: bool
) -> AssertionCase:
    if not isinstance(record, dict):
        raise CaseInputError(f"{source}: a case must be a JSON object, got {type(record).__name__}")
    out_name, output = _first(record, config.output_field, OUTPUT_FIELDS)
    if output is None and not generating:
        others = "" if config.output_field else f" (or {', '.join(repr(n) for n in OUTPUT_FIELDS[1:])})"
        raise CaseInputError(f"{source}: field {out_name!r}: required: the answer to check{others}")
    _in_name, input_value = _first(record, config.input_field, INPUT_FIELDS)
    if input_value is not None and not isinstance(input_value, str):
        input_value = as_text(input_value)
    ref_name, references = _references(record, config, source)
    usage = record.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise CaseInputError(f"{source}: field 'usage': expected an object, got {type(usage).__name__}")
    raw_asserts = record.get("assert", [])
    if not isinstance(raw_asserts, list):
        raise CaseInputError(f"{source}: field 'assert': expected a list of assertions, got {type(raw_asserts).__name__}")
    try:
        asserts = parse_list(raw_asserts, "assert", set(suite_names))
    except SpecError as exc:
        raise CaseInputError(f"{source}: field {exc.field!r}: {exc}") from None
    return AssertionCase(
        record=record,
        source=source,
        output=None if output is None else as_text(output),
        input=input_value,
        references=references,
        reference_field=ref_name,
        asserts=asserts,
        usage=usage,
    )
