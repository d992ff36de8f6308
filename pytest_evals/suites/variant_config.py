"""Variants: named overrides of a suite, every case run under each of them.

A suite file may declare::

    variants:
      - {name: mini, model: gpt-4o-mini}
      - {name: big, model: gpt-4o, better_than: {variant: mini, metric: accuracy}}
    reference: mini          # default: the first variant
    per_variant: true        # thresholds gate every variant (false: the reference only)
    compare_metrics: [accuracy, f1]   # default: every metric the paired tests can pair

and the command line may add variants to every suite (``--evals-variant
NAME:KEY=VALUE[,KEY=VALUE]``, ``--evals-model a,b``). This module reads those fields
and turns one variant into the suite's raw configuration with its overrides applied,
knowing no task: ``model``, ``temperature``, ``system_prompt`` and ``prompt_template``
go to the system under test, which is the suite's model ``target`` when it has one,
else the task's own field of that name (a judge under test), else (model and
temperature) every judged metric; ``target`` replaces the target; ``set`` holds any
other field by dotted key, as ``--evals-set`` does.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pytest_evals.model.errors import SuiteConfigError
from pytest_evals.suites.suite_config import format_validation_error, parse_scalar, set_path

#: Suite fields about variants: read here, never seen by a task's configuration model.
VARIANT_KEYS = ("variants", "reference", "per_variant", "compare_metrics")
#: Fields that say which cases a suite has: variants share the suite's cases.
CASE_KEYS = ("input_path", "data_dir", "sample", "tasks")
#: The settings a variant may give directly (others go through ``set``).
DIRECT_KEYS = ("model", "temperature", "system_prompt", "prompt_template", "target")
#: Settings that belong to the system under test (a model target, or the task's field).
UNDER_TEST = ("model", "temperature", "system_prompt", "prompt_template")
#: A variant's name is part of node ids (``case[name]``) and of metric paths
#: (``name.accuracy``): no dots, brackets, colons or spaces.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+\-]{0,63}$")


class VariantGate(BaseModel):
    """``better_than`` / ``no_worse_than``: this variant against another on one metric."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    variant: str
    metric: str
    #: better_than: the improvement must exceed it; no_worse_than: the largest drop allowed.
    margin: float = Field(default=0.0, ge=0.0)
    alpha: float | None = Field(default=None, gt=0.0, lt=1.0)


class VariantSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str
    model: str | None = None
    temperature: float | None = None
    system_prompt: str | None = None
    prompt_template: str | None = None
    target: str | dict[str, Any] | None = None
    #: Any other field of the suite, by dotted key (``metrics.faithfulness.model``).
    set: dict[str, Any] = Field(default_factory=dict)
    better_than: list[VariantGate] = Field(default_factory=list)
    no_worse_than: list[VariantGate] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME.match(value):
            raise ValueError(
                f"variant name {value!r}: use letters, digits, '_', '+' and '-' (up to 64; it becomes part of "
                "test ids and metric paths)"
            )
        return value

    @field_validator("better_than", "no_worse_than", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, Mapping) else value

    def overrides(self) -> dict[str, Any]:
        """The settings this variant changes, for reports (``set`` keys dotted)."""
        out = {k: getattr(self, k) for k in DIRECT_KEYS if getattr(self, k) is not None}
        out.update(self.set)
        return out


class VariantsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    variants: list[VariantSpec] = Field(min_length=1)
    reference: str | None = None
    per_variant: bool = True
    compare_metrics: list[str] | None = None

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.variants]

    @property
    def reference_name(self) -> str:
        return self.reference or self.variants[0].name

    def check(self, where: str) -> None:
        names = self.names
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise SuiteConfigError(f"{where}: variant name(s) given twice: {', '.join(twice)}")
        if self.reference is not None and self.reference not in names:
            raise SuiteConfigError(f"{where}: reference {self.reference!r} is not a variant ({', '.join(names)})")
        for v in self.variants:
            for kind, gates in (("better_than", v.better_than), ("no_worse_than", v.no_worse_than)):
                for g in gates:
                    if g.variant not in names:
                        raise SuiteConfigError(
                            f"{where}: variants.{v.name}.{kind}.variant {g.variant!r} is not a variant "
                            f"({', '.join(names)})"
                        )
                    if g.variant == v.name:
                        raise SuiteConfigError(f"{where}: variants.{v.name}.{kind}: a variant against itself")


def parse_cli_variant(text: str) -> VariantSpec:
    """``NAME:KEY=VALUE[,KEY=VALUE...]`` (``--evals-variant``). Keys other than the
    direct ones are dotted suite fields (``set``); a value may hold commas when the
    text after the comma is not ``KEY=``."""
    name, sep, rest = text.partition(":")
    if not sep or not rest.strip():
        raise SuiteConfigError(f"--evals-variant {text!r}: expected NAME:KEY=VALUE[,KEY=VALUE...]")
    fields: dict[str, Any] = {"name": name.strip()}
    sets: dict[str, Any] = {}
    for part in re.split(r",(?=\s*[A-Za-z_][A-Za-z0-9_.]*\s*=)", rest):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not key:
            raise SuiteConfigError(f"--evals-variant {text!r}: {part!r} is not KEY=VALUE")
        if key in ("model", "system_prompt", "prompt_template"):
            fields[key] = value
        elif key in DIRECT_KEYS:
            fields[key] = parse_scalar(value)
        else:
            sets[key] = parse_scalar(value)
    if sets:
        fields["set"] = sets
    try:
        return VariantSpec.model_validate(fields)
    except ValidationError as exc:
        raise SuiteConfigError(format_validation_error(f"--evals-variant {text!r}", exc)) from None


def merge_cli_variants(specs: Iterable[VariantSpec]) -> list[VariantSpec]:
    """Options naming the same variant add to it (later keys win), in first-seen order."""
    merged: dict[str, VariantSpec] = {}
    for spec in specs:
        old = merged.get(spec.name)
        if old is None:
            merged[spec.name] = spec
            continue
        data = old.model_dump(exclude_defaults=True)
        new = spec.model_dump(exclude_defaults=True, exclude={"set"})
        clash = sorted(k for k, v in new.items() if k != "name" and k in data and data[k] != v)
        clash += sorted(k for k, v in spec.set.items() if k in old.set and old.set[k] != v)
        if clash:
            # Two values for one setting of one variant: keeping either would drop a run
            # the command line asked for, without a word.
            raise SuiteConfigError(
                f"variant {spec.name!r} is given twice with different {', '.join(repr(k) for k in clash)}: "
                "give each variant its own name"
            )
        data.update(new)
        data["set"] = {**old.set, **spec.set}
        merged[spec.name] = VariantSpec.model_validate(data)
    return list(merged.values())


def model_variant_name(model: str) -> str:
    """A variant name for ``--evals-model a,b``: the model name with other characters as '_'."""
    name = re.sub(r"[^A-Za-z0-9_+\-]", "_", model.strip())[:64] or "model"
    return name if name[0].isalnum() else f"m{name}"[:64]


def split_variants(raw: dict[str, Any], where: str) -> tuple[dict[str, Any], VariantsConfig | None]:
    """The suite's fields without the variant fields, and those fields read (None: the
    suite declares no variants)."""
    if not any(k in raw for k in VARIANT_KEYS):
        return raw, None
    base = {k: v for k, v in raw.items() if k not in VARIANT_KEYS}
    given = {k: raw[k] for k in VARIANT_KEYS if k in raw}
    if "variants" not in given:
        raise SuiteConfigError(f"{where}: {', '.join(sorted(given))} without 'variants'")
    if isinstance(given["variants"], list):
        # The short form ``variants: [gpt-4o-mini, gpt-4o]``: one model each.
        given["variants"] = [
            {"name": model_variant_name(v), "model": v} if isinstance(v, str) else v for v in given["variants"]
        ]
    try:
        spec = VariantsConfig.model_validate(given)
    except ValidationError as exc:
        raise SuiteConfigError(format_validation_error(where, exc)) from None
    spec.check(where)
    return base, spec


def with_cli_variants(spec: VariantsConfig | None, cli: Sequence[VariantSpec], where: str) -> VariantsConfig | None:
    """The suite's variants followed by the command line's (a name given by both is an error)."""
    if not cli:
        return spec
    if spec is None:
        out = VariantsConfig(variants=list(cli))
    else:
        out = spec.model_copy(update={"variants": [*spec.variants, *cli]})
    out.check(where)
    return out


def _model_target(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    target = raw.get("target")
    return target if isinstance(target, dict) and "model" in target else None


def applicable(raw: Mapping[str, Any], spec: VariantSpec, fields: Iterable[str]) -> str | None:
    """Why ``spec`` cannot apply to a suite with these raw fields and config fields (None: it can)."""
    try:
        variant_raw(raw, spec, fields, "")
    except SuiteConfigError as exc:
        return str(exc)
    return None


def variant_raw(raw: Mapping[str, Any], spec: VariantSpec, fields: Iterable[str], where: str) -> dict[str, Any]:
    """The suite's raw fields with ``spec``'s overrides applied (see the module docstring)."""
    out = copy.deepcopy(dict(raw))
    known = set(fields)
    if spec.target is not None:
        out["target"] = copy.deepcopy(spec.target)
    target = _model_target(out)
    for key in UNDER_TEST:
        value = getattr(spec, key)
        if value is None:
            continue
        if target is not None:
            target[key] = value
        elif key in known and key not in ("target", "metrics"):
            out[key] = value
        elif key in ("model", "temperature") and isinstance(out.get("metrics"), list) and out["metrics"]:
            out["metrics"] = [
                {**(m if isinstance(m, dict) else {"name": m}), key: value} for m in out["metrics"]
            ]
        else:
            raise SuiteConfigError(
                f"{where}: variant {spec.name!r}: {key}: the suite has nothing to apply it to (no model target, "
                f"no field {key!r}" + (", no judged metrics" if key in ("model", "temperature") else "")
                + "); use set: {FIELD: VALUE} to name the field"
            )
    for dotted, value in spec.set.items():
        top = dotted.split(".", 1)[0]
        if top in VARIANT_KEYS:
            raise SuiteConfigError(f"{where}: variant {spec.name!r}: set.{dotted}: a variant cannot change variants")
        if top in CASE_KEYS:
            raise SuiteConfigError(
                f"{where}: variant {spec.name!r}: set.{dotted}: variants run the suite's own cases (compare other "
                "cases in another suite)"
            )
        set_path(out, dotted, copy.deepcopy(value))
    return out
