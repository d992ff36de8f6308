"""The HarpIA Lab input file: instances to evaluate and the metrics to compute (seed 002).

    {"instances": [{"id": "1", "input": "...", "actual-output": "...",
                    "expected-output": ["...", "..."]}],
     "metrics": [{"id": "bleu", "enable": true, "parameters": {"weights": [0.5, 0.5]}}]}

Key spellings are forgiving, as HarpIA's own are only published as pictures: case,
``-``, ``_`` and spaces do not matter (``actual-output``, ``actual_output`` and
``Actual Output`` are one field), ``enabled`` means ``enable`` and ``params`` means
``parameters``. File-level problems raise :class:`SuiteConfigError` naming the file and
the field; an instance's problems are raised when that instance runs, naming its id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pytest_evals.metrics.reference import (
    BadParameters,
    MetricError,
    ReferenceMetric,
    UnknownMetric,
    build_metric,
    canonical_id,
)
from pytest_evals.model.errors import CaseInputError, SuiteConfigError
from pytest_evals.suites.json_files import JsonFileError, read_json_file

#: HarpIA's spelling of each field, for messages and written files.
HARPIA_NAMES = {"actual_output": "actual-output", "expected_output": "expected-output"}
_KEY_ALIASES = {"enabled": "enable", "params": "parameters", "instance_id": "id"}


def normalise_key(key: str) -> str:
    k = str(key).strip().lower().replace("-", "_").replace(" ", "_")
    return _KEY_ALIASES.get(k, k)


def normalise_keys(data: Mapping[str, Any]) -> dict[str, Any]:
    return {normalise_key(k): v for k, v in data.items()}


def field_name(loc: str) -> str:
    return HARPIA_NAMES.get(loc, loc)


class Instance(BaseModel):
    """One test instance; extra fields are kept in the file and ignored here."""

    model_config = ConfigDict(extra="ignore")

    id: str
    input: str = ""
    actual_output: str | None = Field(default=None, serialization_alias="actual-output")
    expected_output: list[str] = Field(default_factory=list, serialization_alias="expected-output")

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("expected_output", mode="before")
    @classmethod
    def _one_reference(cls, value: Any) -> Any:
        # A bare string is one reference; null means none.
        if value is None:
            return []
        return [value] if isinstance(value, str) else value


class MetricEntry(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    enable: bool = True
    parameters: dict[str, Any] = Field(default_factory=dict)
    #: Our addition: a distinct name when one metric id is listed twice.
    name: str | None = None

    @field_validator("parameters", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value


@dataclass
class MetricSpec:
    """An enabled metric of the file, built and validated."""

    #: Key in metric trees, case data and written files (the id unless ``name`` is given).
    name: str
    id: str
    #: Exactly as written in the input file (HarpIA copies these to its outputs).
    parameters: dict[str, Any]
    metric: ReferenceMetric
    position: int


@dataclass
class HarpiaDocument:
    path: Path
    shown: str
    #: Raw instance objects, in file order (validated one by one when they run).
    instances: list[Any]
    specs: list[MetricSpec]
    disabled: list[MetricEntry] = field(default_factory=list)

    def source(self, instance_id: str) -> str:
        return f"{self.shown}#{instance_id}"


def _read_json(path: Path, shown: str) -> Any:
    # Bounded: a regular file only (a FIFO or /dev/zero is refused, not read), at most
    # evals_max_json_file_bytes, nested no deeper than evals_max_json_depth.
    try:
        raw = read_json_file(path)
    except FileNotFoundError:
        raise SuiteConfigError(f"{shown}: HarpIA input file not found") from None
    except JsonFileError as exc:
        raise SuiteConfigError(f"{shown}: {exc} (a HarpIA input file)") from None
    except json.JSONDecodeError as exc:
        if not exc.doc.strip():
            raise SuiteConfigError(f"{shown}: the file is empty") from None
        raise SuiteConfigError(f"{shown}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    except OSError as exc:
        raise SuiteConfigError(f"{shown}: cannot read the HarpIA input file: {exc.strerror or exc}") from None
    return raw


def _metric_label(index: int, entry: Any) -> str:
    if isinstance(entry, Mapping):
        ident = normalise_keys(entry).get("id")
        if isinstance(ident, str):
            return f"metrics[{index}] (id {ident!r})"
    return f"metrics[{index}]"


_NAME = re.compile(r"[A-Za-z0-9_-]+")
#: Keys the suite summary adds next to the metrics (and our per-instance branch).
RESERVED_NAMES = ("errors", "cases", "per_instance")


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot key a metric in the suite's metric tree, or None."""
    if not _NAME.fullmatch(name):
        return "may only contain letters, digits, '_' and '-' (it is a key in gate paths)"
    if name in RESERVED_NAMES or name.startswith("errors_"):
        return f"is reserved ({', '.join(RESERVED_NAMES)}, errors_*); choose another 'name'"
    return None


def build_specs(shown: str, raw_metrics: list[Any]) -> tuple[list[MetricSpec], list[MetricEntry]]:
    specs: list[MetricSpec] = []
    disabled: list[MetricEntry] = []
    problems: list[str] = []
    for i, raw in enumerate(raw_metrics):
        label = _metric_label(i, raw)
        if not isinstance(raw, Mapping):
            problems.append(f"{label}: expected an object with id, enable and parameters, got {type(raw).__name__}")
            continue
        try:
            entry = MetricEntry.model_validate(normalise_keys(raw))
        except ValidationError as exc:
            for err in exc.errors():
                loc = ".".join(str(p) for p in err["loc"]) or "(metric)"
                problems.append(f"{label}: field {loc!r}: {err['msg']}")
            continue
        if not entry.enable:
            disabled.append(entry)
            continue
        try:
            metric = build_metric(entry.id, entry.parameters)
        except (UnknownMetric, BadParameters) as exc:
            problems.append(f"{label}: {exc.args[0]}")
            continue
        # The canonical (lower-case) id keys everything; the file's spelling does not matter.
        ident = canonical_id(entry.id)
        specs.append(MetricSpec(entry.name or ident, ident, dict(entry.parameters), metric, i))
    seen: dict[str, int] = {}
    for spec in specs:
        problem = name_problem(spec.name)
        if problem:
            problems.append(f"metrics[{spec.position}] (id {spec.id!r}): name {spec.name!r} {problem}")
        if spec.name in seen:
            problems.append(
                f"metrics[{spec.position}] (id {spec.id!r}): name {spec.name!r} is already used by "
                f"metrics[{seen[spec.name]}]; give each a distinct 'name'"
            )
        seen.setdefault(spec.name, spec.position)
    if problems:
        raise SuiteConfigError(f"{shown}: invalid metrics\n  " + "\n  ".join(problems))
    return specs, disabled


def load_document(path: Path, shown: str | None = None) -> HarpiaDocument:
    """Parse and check a HarpIA input file (metrics fully, instances only structurally)."""
    shown = shown or str(path)
    raw = _read_json(path, shown)
    if not isinstance(raw, Mapping):
        raise SuiteConfigError(
            f"{shown}: expected a JSON object with 'instances' and 'metrics', got {type(raw).__name__}"
        )
    top = normalise_keys(raw)
    missing = [k for k in ("instances", "metrics") if k not in top]
    if missing:
        raise SuiteConfigError(f"{shown}: missing field {', '.join(map(repr, missing))} (found: {', '.join(map(repr, raw))})")
    for key in ("instances", "metrics"):
        if not isinstance(top[key], list):
            raise SuiteConfigError(f"{shown}: field {key!r} must be a list, got {type(top[key]).__name__}")
    if not top["instances"]:
        raise SuiteConfigError(f"{shown}: field 'instances' is empty: nothing to evaluate")
    specs, disabled = build_specs(shown, top["metrics"])
    if not specs:
        raise SuiteConfigError(f"{shown}: no enabled metric in 'metrics' (set \"enable\": true on at least one)")
    return HarpiaDocument(path=path, shown=shown, instances=list(top["instances"]), specs=specs, disabled=disabled)


def instance_id_of(raw: Any) -> str | None:
    """The id of a raw instance when it has a usable one (for collection)."""
    if not isinstance(raw, Mapping):
        return None
    value = normalise_keys(raw).get("id")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value).strip()
    return text or None


def validate_instance(raw: Any, source: str, *, need_output: bool, need_references: list[str]) -> Instance:
    """Validate one instance; errors name the instance (file#id) and the field."""
    if not isinstance(raw, Mapping):
        raise CaseInputError(f"{source}: an instance must be a JSON object, got {type(raw).__name__}")
    try:
        inst = Instance.model_validate(normalise_keys(raw))
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            loc = ".".join(field_name(str(p)) for p in err["loc"]) or "(instance)"
            parts.append(f"field {loc!r}: {err['msg']}")
        raise CaseInputError(f"{source}: " + "; ".join(parts)) from None
    if need_output and inst.actual_output is None:
        raise CaseInputError(
            f"{source}: field 'actual-output' is missing (or use generate: true with a target to produce it)"
        )
    if need_references and not inst.expected_output:
        raise CaseInputError(
            f"{source}: field 'expected-output' has no reference; supervised metric(s) "
            f"{', '.join(need_references)} need at least one"
        )
    return inst


def check_environment(doc: HarpiaDocument) -> None:
    """Fail the suite before any instance runs when a metric's data is missing (e.g. WordNet)."""
    problems = []
    for spec in doc.specs:
        try:
            spec.metric.check_environment()
        except MetricError as exc:
            problems.append(f"metrics[{spec.position}] (id {spec.id!r}): {exc}")
    if problems:
        raise SuiteConfigError(f"{doc.shown}: " + "\n  ".join(problems))
