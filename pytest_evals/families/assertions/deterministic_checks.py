"""Assertions computed from the answer alone: text, patterns, JSON, numbers, length.

Each type has a parameter model (unknown keys and wrong value types are errors naming
the field) and a check built once per assertion: regexes are compiled and JSON schemas
checked when the suite (or the case) is read, not at every case.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_evals.families.assertions.assertion_outcome import CaseView, Outcome, yes_no
from pytest_evals.model.errors import CaseInputError


class AssertionProblem(ValueError):
    """A malformed assertion: ``field`` is the key at fault (``value``, ``schema``...)."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field


class CommonParams(BaseModel):
    """Keys every assertion accepts."""

    # Strict: "0.9" is not a number; and no NaN or infinity (an infinite tolerance or
    # weight would make any answer pass, or every score NaN).
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    type: str
    name: str | None = Field(default=None, min_length=1)
    weight: float = Field(default=1.0, ge=0.0)
    threshold: float | None = None


class TextParams(CommonParams):
    value: str


class TextListParams(CommonParams):
    value: list[str] = Field(min_length=1)


class EqualsParams(CommonParams):
    #: A string is compared with the answer (surrounding whitespace ignored); any other
    #: JSON value with the answer parsed as JSON.
    value: Any
    ignore_case: bool = False


class RegexParams(CommonParams):
    value: str
    ignore_case: bool = False
    multiline: bool = False


class StartsWithParams(CommonParams):
    value: str
    ignore_case: bool = False


class JsonParams(CommonParams):
    pass


class SchemaParams(CommonParams):
    schema_: dict[str, Any] = Field(alias="schema")

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, populate_by_name=True)


class NumericParams(CommonParams):
    value: float
    tolerance: float = Field(default=0.0, ge=0.0)


class LengthParams(CommonParams):
    unit: str = "chars"
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)


Check = Callable[[CaseView], Outcome]


def _short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _contains(negate: bool, fold: bool) -> Callable[[TextParams], Check]:
    def build(p: TextParams) -> Check:
        needle = p.value.casefold() if fold else p.value

        def check(view: CaseView) -> Outcome:
            hay = view.output.casefold() if fold else view.output
            found = needle in hay
            ok = found != negate
            what = "contains" if found else "does not contain"
            return yes_no(ok, f"the answer {what} {_short(p.value)}")

        return check

    return build


def _contains_list(mode: str, fold: bool) -> Callable[[TextListParams], Check]:
    def build(p: TextListParams) -> Check:
        needles = [v.casefold() if fold else v for v in p.value]

        def check(view: CaseView) -> Outcome:
            hay = view.output.casefold() if fold else view.output
            present = [orig for orig, n in zip(p.value, needles, strict=True) if n in hay]
            missing = [orig for orig, n in zip(p.value, needles, strict=True) if n not in hay]
            if mode == "any":
                ok = bool(present)
                reason = (f"the answer contains {_short(present[0])}" if ok
                          else f"the answer contains none of {p.value!r}")
            elif mode == "all":
                ok = not missing
                reason = "the answer contains all of them" if ok else f"the answer lacks {missing!r}"
            else:  # none
                ok = not present
                reason = "the answer contains none of them" if ok else f"the answer contains {present!r}"
            return yes_no(ok, reason, present=present)

        return check

    return build


def _equals(p: EqualsParams) -> Check:
    if isinstance(p.value, str):
        want = p.value.strip()

        def check_text(view: CaseView) -> Outcome:
            got = view.output.strip()
            ok = got.casefold() == want.casefold() if p.ignore_case else got == want
            return yes_no(ok, "the answer equals the value" if ok else f"the answer is not {_short(want)}")

        return check_text

    def check_json(view: CaseView) -> Outcome:
        parsed, got, _problem = parse_json_answer(view.output)
        if not parsed:
            return yes_no(False, f"the answer is not JSON, so it cannot equal {p.value!r}")
        ok = json_equal(got, p.value)
        return yes_no(ok, "the answer equals the value" if ok else f"the answer's JSON is not {p.value!r}")

    return check_json


#: Seconds one regex search may take: a pattern that backtracks catastrophically
#: (``^(a+)+$`` on "aaaa...b") would otherwise hold the GIL, past any case timeout.
REGEX_SECONDS = 1.0


def _regex(p: RegexParams) -> Check:
    # The `regex` package: Python's own syntax (VERSION0), and a search it can stop.
    import regex

    flags = (regex.IGNORECASE if p.ignore_case else 0) | (regex.MULTILINE if p.multiline else 0)
    try:
        pattern = regex.compile(p.value, flags | regex.VERSION0)
    except Exception as exc:  # regex.error, and RecursionError/OverflowError on huge patterns
        raise AssertionProblem("value", f"invalid regular expression {_short(p.value)}: {type(exc).__name__}: {exc}") from None

    def check(view: CaseView) -> Outcome:
        try:
            match = pattern.search(view.output, timeout=REGEX_SECONDS)
        except TimeoutError:
            raise CaseInputError(
                f"{view.source}: field 'value': the regular expression {_short(p.value)} took over {REGEX_SECONDS:g} s "
                "on this answer (a pattern that backtracks catastrophically, such as nested "
                "repeats); simplify it"
            ) from None
        if match is None:
            return yes_no(False, f"no match of /{p.value}/ in the answer")
        return yes_no(True, f"/{p.value}/ matches {_short(match.group(0))}", match=match.group(0))

    return check


def _starts_with(p: StartsWithParams) -> Check:
    def check(view: CaseView) -> Outcome:
        text = view.output.lstrip()
        ok = (text.casefold().startswith(p.value.casefold()) if p.ignore_case
              else text.startswith(p.value))
        return yes_no(ok, f"the answer {'starts' if ok else 'does not start'} with {_short(p.value)}")

    return check


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


def parse_json_answer(output: str) -> tuple[bool, Any, str]:
    """(parsed, value, problem) for the answer read as one JSON document (RFC 8259:
    Python's reader also takes NaN and Infinity, which no other JSON reader does)."""
    try:
        return True, json.loads(output, parse_constant=_no_constant), ""
    except (ValueError, RecursionError) as exc:
        return False, None, f"the answer is not JSON: {exc}"


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values by JSON's types: true is not 1, 1 is 1.0, objects and
    arrays compare member by member (Python's == says True == 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _is_json(p: JsonParams) -> Check:
    def check(view: CaseView) -> Outcome:
        ok, _value, problem = parse_json_answer(view.output)
        return yes_no(ok, "the answer is valid JSON" if ok else problem)

    return check


def _json_schema(p: SchemaParams) -> Check:
    import jsonschema
    import referencing.exceptions

    try:
        validator_cls = jsonschema.validators.validator_for(p.schema_)
        validator_cls.check_schema(p.schema_)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(x) for x in exc.path)
        raise AssertionProblem("schema", f"invalid JSON Schema{f' at {where}' if where else ''}: {exc.message}") from None
    validator = validator_cls(p.schema_)

    def check(view: CaseView) -> Outcome:
        ok, value, problem = parse_json_answer(view.output)
        if not ok:
            return yes_no(False, problem)
        try:
            errors = sorted(validator.iter_errors(value), key=lambda e: str(list(e.path)))
        except referencing.exceptions.Unresolvable as exc:
            # Never fetched from the network: the schema must carry what it refers to.
            raise CaseInputError(
                f"{view.source}: field 'schema': cannot resolve {exc.ref!r}; references are "
                "not fetched: put the referenced schema under $defs"
            ) from None
        if not errors:
            return yes_no(True, "the answer matches the schema")
        first = errors[0]
        at = "/".join(str(x) for x in first.path) or "(root)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return yes_no(False, f"schema: at {at}: {first.message}{more}", errors=len(errors))

    return check


_NUMBER = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")


def _numeric(p: NumericParams) -> Check:
    if not math.isfinite(p.value):
        raise AssertionProblem("value", f"expected a finite number, got {p.value!r}")

    def check(view: CaseView) -> Outcome:
        text = view.output.strip()
        if not _NUMBER.match(text):
            return Outcome(False, 0.0, None, f"the answer is not a number: {_short(view.output)}")
        got = float(text)
        ok = abs(got - p.value) <= p.tolerance
        return Outcome(ok, 1.0 if ok else 0.0, got,
                       f"{got:g} is {'within' if ok else 'not within'} {p.tolerance:g} of {p.value:g}")

    return check


def _length(p: LengthParams) -> Check:
    if p.unit not in ("chars", "words"):
        raise AssertionProblem("unit", f"expected 'chars' or 'words', got {p.unit!r}")
    if p.min is None and p.max is None:
        raise AssertionProblem("min", "give min, max or both")
    if p.min is not None and p.max is not None and p.min > p.max:
        raise AssertionProblem("max", f"max ({p.max}) is below min ({p.min})")

    def check(view: CaseView) -> Outcome:
        n = len(view.output.split()) if p.unit == "words" else len(view.output)
        ok = (p.min is None or n >= p.min) and (p.max is None or n <= p.max)
        bounds = f"[{'' if p.min is None else p.min}, {'' if p.max is None else p.max}]"
        return Outcome(ok, 1.0 if ok else 0.0, float(n), f"{n} {p.unit}, {'inside' if ok else 'outside'} {bounds}")

    return check


#: type -> (parameter model, builder)
DETERMINISTIC: dict[str, tuple[type[CommonParams], Callable[[Any], Check]]] = {
    "equals": (EqualsParams, _equals),
    "contains": (TextParams, _contains(False, False)),
    "icontains": (TextParams, _contains(False, True)),
    "not_contains": (TextParams, _contains(True, False)),
    "not_icontains": (TextParams, _contains(True, True)),
    "contains_any": (TextListParams, _contains_list("any", False)),
    "icontains_any": (TextListParams, _contains_list("any", True)),
    "contains_all": (TextListParams, _contains_list("all", False)),
    "icontains_all": (TextListParams, _contains_list("all", True)),
    "not_contains_any": (TextListParams, _contains_list("none", False)),
    "not_icontains_any": (TextListParams, _contains_list("none", True)),
    "regex": (RegexParams, _regex),
    "starts_with": (StartsWithParams, _starts_with),
    "is_json": (JsonParams, _is_json),
    "json_schema": (SchemaParams, _json_schema),
    "numeric": (NumericParams, _numeric),
    "length": (LengthParams, _length),
}
