"""Suite files: ``*.eval.yaml`` parsed into a validated configuration.

Field names follow GOV.UK Chat's evaluation configs (``what``, ``generate``,
``input_path``, ``metrics``, ``n_runs``) plus ``task`` and suite-level ``thresholds``.
Each task may extend :class:`SuiteConfig` with its own fields. Command-line overrides
are applied here, once, so workers and the controller see the same configuration.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pytest_evals.errors import SuiteConfigError

SUITE_PATTERNS: tuple[str, ...] = ("*.eval.yaml", "*.eval.yml")


def is_suite_path(name: str, patterns: Iterable[str] = SUITE_PATTERNS) -> bool:
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(base, p) for p in patterns)


class MetricSpec(BaseModel):
    """One per-case metric: GOV.UK's ``{name, threshold, model, temperature}``."""

    model_config = ConfigDict(extra="allow")

    name: str
    threshold: float | None = None
    model: str | None = None
    temperature: float | None = None


class SuiteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str
    name: str | None = None
    what: str = ""
    generate: bool = False
    input_path: str | None = None
    metrics: list[MetricSpec] = Field(default_factory=list)
    n_runs: int = Field(default=1, ge=1)
    thresholds: dict[str, Any] = Field(default_factory=dict)
    #: The system under test for ``generate: true``: "pkg.module:function",
    #: {"command": [...]} or {"model": ..., "system_prompt": ...}.
    target: str | dict[str, Any] | None = None
    #: Send this suite's uncached model requests through the Batch API first (batch mode).
    batch: bool = False

    @field_validator("metrics", mode="before")
    @classmethod
    def _metric_names(cls, value: Any) -> Any:
        # Accept the short form `metrics: [faithfulness, relevance]` as well.
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value


@dataclass
class Suite:
    """A loaded suite: where it lives, what it is called, its validated configuration."""

    path: Path
    nodeid: str
    name: str
    config: SuiteConfig
    raw: dict[str, Any]

    def resolve(self, relative: str | Path) -> Path:
        """Paths in a suite are relative to the suite file."""
        p = Path(relative).expanduser()
        return p if p.is_absolute() else (self.path.parent / p)


def parse_scalar(text: str) -> Any:
    """Parse an override value the way YAML would (true, 3, 0.9, [a, b], text)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``a.b.c`` in nested dicts; list items of dicts are addressed by their ``name``."""
    parts = dotted.split(".")
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            match = [m for m in node if isinstance(m, dict) and m.get("name") == part]
            if not match:
                raise SuiteConfigError(f"override {dotted!r}: no list entry named {part!r}")
            node = match[0]
            if last:
                raise SuiteConfigError(f"override {dotted!r}: cannot replace a list entry")
            continue
        if not isinstance(node, dict):
            raise SuiteConfigError(f"override {dotted!r}: {part!r} is not a mapping")
        if last:
            node[part] = value
        else:
            node = node.setdefault(part, {})


@dataclass(frozen=True)
class Override:
    """``--evals-set [SUITE:]KEY=VALUE``: a field override for all suites or one suite."""

    key: str
    value: Any
    suite: str | None = None
    #: Overrides from dedicated flags apply only to suites whose task has the field.
    only_if_known: bool = False

    @classmethod
    def parse(cls, text: str) -> Override:
        if "=" not in text:
            raise SuiteConfigError(
                f"--evals-set {text!r}: expected KEY=VALUE or SUITE:KEY=VALUE"
            )
        left, value = text.split("=", 1)
        suite, _, key = left.rpartition(":")
        if not key.strip():
            raise SuiteConfigError(f"--evals-set {text!r}: empty key")
        return cls(key=key.strip(), value=parse_scalar(value), suite=suite.strip() or None)


def suite_name(path: Path, raw: Mapping[str, Any]) -> str:
    name = raw.get("name")
    if isinstance(name, str) and name:
        return name
    base = path.name
    for suffix in (".eval.yaml", ".eval.yml", ".yaml", ".yml", ".json"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SuiteConfigError(f"{path}: suite file not found") from None
    except UnicodeDecodeError as exc:
        raise SuiteConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise SuiteConfigError(f"{where}: invalid YAML: {exc}") from None
    if raw is None:
        raise SuiteConfigError(f"{path}: suite file is empty")
    if not isinstance(raw, dict):
        raise SuiteConfigError(f"{path}: a suite must be a mapping of fields, got {type(raw).__name__}")
    return raw


def format_validation_error(where: str, exc: ValidationError) -> str:
    lines = [f"{where}: invalid suite configuration"]
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"  field {loc!r}: {err['msg']}")
    return "\n".join(lines)


def load_suite(
    path: Path,
    nodeid: str,
    overrides: Iterable[Override] = (),
    raw: dict[str, Any] | None = None,
    used: set[int] | None = None,
) -> Suite:
    """Read, override and validate one suite file (the task's own config model)."""
    from pytest_evals.tasks import get_task_class

    raw = dict(raw) if raw is not None else read_yaml(path)
    task_name = raw.get("task")
    if not isinstance(task_name, str):
        raise SuiteConfigError(f"{path}: field 'task' is required (e.g. task: jailbreak_guardrails)")
    task_cls = get_task_class(task_name, where=str(path))
    name = suite_name(path, raw)
    known = set(task_cls.config_model.model_fields)
    for ov in overrides:
        if ov.suite is not None and ov.suite != name:
            continue
        top = ov.key.split(".", 1)[0]
        if top not in known:
            if ov.only_if_known or ov.suite is None:
                continue
            raise SuiteConfigError(
                f"{path}: override {ov.key!r}: task {task_name!r} has no field {top!r}; "
                f"fields: {', '.join(sorted(known))}"
            )
        set_path(raw, ov.key, ov.value)
        if used is not None:
            # by identity: override values may be unhashable lists
            used.add(id(ov))
    try:
        config = task_cls.config_model.model_validate(raw)
    except ValidationError as exc:
        raise SuiteConfigError(format_validation_error(str(path), exc)) from None
    return Suite(path=path, nodeid=nodeid, name=name, config=config, raw=raw)
