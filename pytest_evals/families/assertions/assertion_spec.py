"""Turning ``assert:`` entries (and custom ``metrics:``) into checks, or into an error
that names the file, the line and the field.

An entry is a mapping with a ``type`` (see ``docs/assertions.md``), an optional
``name`` (default: the type, numbered when it repeats), a ``weight`` (default 1) and a
``threshold`` in the assertion's own units. Whatever can be checked before any case
runs is: unknown types and keys, value types (strictly: ``"0.9"`` is not a number),
regular expressions, JSON schemas, the reference metrics' parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from pytest_evals.families.assertions import deterministic_checks as det
from pytest_evals.families.assertions import judged_checks as judged
from pytest_evals.families.assertions import reference_checks as ref
from pytest_evals.families.assertions import usage_checks as usage
from pytest_evals.families.assertions.assertion_outcome import Outcome

Kind = Literal["deterministic", "reference", "judged", "usage"]

#: Top-level metric names of an assertions suite (and the core's counts): a custom
#: metric may not take one.
RESERVED = frozenset({"pass_rate", "score", "per_assertion", "cases", "errors"})


@dataclass
class Assertion:
    name: str
    type: str
    kind: Kind
    weight: float
    #: ``run(view, ctx) -> Outcome`` (a coroutine) for reference, judged and usage
    #: types; ``check(view) -> Outcome`` for deterministic ones.
    runner: Any
    #: The interval range of the assertion's value, when it has one.
    bounds: tuple[float, float] | None = None
    #: Reported as a metric of its own (a custom metric or a named judged assertion).
    custom: bool = False
    threshold: float | None = None

    @property
    def is_async(self) -> bool:
        return self.kind != "deterministic"


class SpecError(ValueError):
    """A malformed entry; ``field`` is its dotted path, e.g. ``assert[2].value``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def all_types() -> list[str]:
    return [*det.DETERMINISTIC, *ref.reference_types(), "similar", *judged.JUDGED, *usage.USAGE]


def _pydantic_problem(prefix: str, exc: ValidationError) -> SpecError:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"] if p != "[key]")
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        msg = "unknown key for this type"
    elif first["type"] == "value_error":
        msg = msg.removeprefix("Value error, ")
    more = len(exc.errors()) - 1
    if more:
        msg += f" (and {more} more problem{'s' if more > 1 else ''})"
    return SpecError(f"{prefix}.{loc}" if loc else prefix, msg)


def _validate(model: type[det.CommonParams], raw: dict[str, Any], prefix: str) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise _pydantic_problem(prefix, exc) from None


def parse_one(raw: Any, prefix: str, default_name: str | None = None) -> Assertion:
    """One entry -> an :class:`Assertion`; :class:`SpecError` naming the field."""
    if not isinstance(raw, dict):
        raise SpecError(prefix, f"an assertion must be a mapping with a 'type', got {type(raw).__name__}")
    kind_raw = raw.get("type")
    if not isinstance(kind_raw, str) or not kind_raw.strip():
        raise SpecError(f"{prefix}.type", "required: one of " + ", ".join(all_types()))
    kind = kind_raw.strip().lower().replace("-", "_")
    given = raw.get("name")
    name: str = given if isinstance(given, str) and given else default_name or kind
    try:
        if kind in det.DETERMINISTIC:
            model, builder = det.DETERMINISTIC[kind]
            p = _validate(model, raw, prefix)
            return Assertion(name, kind, "deterministic", p.weight, builder(p))
        if kind == "similar":
            sp = _validate(ref.SimilarParams, raw, prefix)
            check = ref.build_similar(sp, name)
            return Assertion(name, kind, "reference", sp.weight, check, (-1.0, 1.0), threshold=check.threshold)
        if kind in ref.reference_types():
            metric_check, common = ref.build_metric_check(kind, raw, name)
            return Assertion(name, kind, "reference", common.weight, metric_check, metric_check.bounds,
                             threshold=metric_check.threshold)
        if kind in judged.JUDGED:
            if kind == "llm_rubric" and raw.get("criteria") is None and raw.get("value") is None:
                raise SpecError(f"{prefix}.criteria", "required: the rubric's criteria (criteria: or value:)")
            jp = _validate(judged.JUDGED[kind], raw, prefix)
            jcheck = judged.build_judged(kind, jp, name)
            bounds = (float(jcheck.scale[0]), float(jcheck.scale[1])) if isinstance(jcheck, judged.GEvalCheck) else (0.0, 1.0)
            return Assertion(name, kind, "judged", jp.weight, jcheck, bounds, threshold=jcheck.threshold)
        if kind in usage.USAGE:
            up = _validate(usage.USAGE[kind], raw, prefix)
            return Assertion(name, kind, "usage", up.weight, usage.build_usage(kind, up, name))
    except ValidationError as exc:
        raise _pydantic_problem(prefix, exc) from None
    except ValueError as exc:
        # AssertionProblem, told by its field rather than its class: a test run that
        # imports this package afresh (pytester in process) may hold two copies of it.
        if not hasattr(exc, "field") or isinstance(exc, SpecError):
            raise
        field = exc.field
        raise SpecError(f"{prefix}.{field}" if field else prefix, str(exc)) from None
    raise SpecError(f"{prefix}.type", f"unknown assertion type {kind_raw!r}; known: {', '.join(all_types())}")


def parse_metric(raw: Any, prefix: str) -> Assertion:
    """A custom metric: ``{name, criteria, scale, threshold, steps, judge}`` is a
    ``g_eval`` (an ``llm_rubric`` without ``scale``, or the ``type`` it names)."""
    if not isinstance(raw, dict):
        raise SpecError(prefix, f"a metric must be a mapping with a 'name' and 'criteria', got {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SpecError(f"{prefix}.name", "required: the metric's name")
    entry = dict(raw)
    entry.setdefault("type", "g_eval" if "scale" in raw or "steps" in raw else "llm_rubric")
    found = parse_one(entry, prefix)
    if found.kind != "judged":
        raise SpecError(f"{prefix}.type", f"a custom metric is judged ({', '.join(judged.JUDGED)}), "
                                          f"got {found.type!r}; put other checks under assert:")
    found.custom = True
    return found


def parse_list(
    raws: Sequence[Any],
    label: str,
    taken: set[str],
    parse: Callable[[Any, str], Assertion] | None = None,
) -> list[Assertion]:
    """Every entry of one list (``label`` is its key: ``assert`` or ``metrics``); names
    are made unique against ``taken`` (updated), explicit duplicates are errors."""
    out: list[Assertion] = []
    for i, raw in enumerate(raws):
        prefix = f"{label}[{i}]"
        explicit = isinstance(raw, dict) and isinstance(raw.get("name"), str) and bool(raw.get("name"))
        item = (parse or parse_one)(raw, prefix)
        if explicit:
            if item.name in taken:
                raise SpecError(f"{prefix}.name", f"duplicate name {item.name!r}; names must be unique")
            if item.name in RESERVED or item.name.startswith("errors_") or "." in item.name:
                raise SpecError(f"{prefix}.name", f"{item.name!r} is reserved (or has a '.'); choose another name")
            if item.kind == "judged":
                item.custom = True
        else:
            base, n = item.name, 2
            while item.name in taken:
                item.name, n = f"{base}-{n}", n + 1
        taken.add(item.name)
        if hasattr(item.runner, "name"):
            item.runner.name = item.name  # its errors say the name reports use
        out.append(item)
    return out


async def run_assertion(item: Assertion, view: Any, ctx: Any) -> Outcome:
    if item.kind == "deterministic":
        outcome: Outcome = item.runner(view)
        return outcome
    outcome = await item.runner.run(view, ctx)
    return outcome
