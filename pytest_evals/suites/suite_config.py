"""Suite files: ``*.eval.yaml`` parsed into a validated configuration.

Field names follow GOV.UK Chat's evaluation configs (``what``, ``generate``,
``input_path``, ``metrics``, ``n_runs``) plus ``task`` and suite-level ``thresholds``.
Each task may extend :class:`SuiteConfig` with its own fields. Command-line overrides
are applied here, once, so workers and the controller see the same configuration.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pytest_evals.hardening.input_limits import max_depth
from pytest_evals.model.errors import SuiteConfigError
from pytest_evals.suites import suite_paths
from pytest_evals.suites.value_depth import too_deep_field


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

    #: pytest's rootdir: the second place a relative path is looked for.
    rootdir: Path | None = None
    #: The variant this configuration is, in a suite with variants (suites/variant_config.py).
    variant: str | None = None

    def resolve(self, relative: str | Path) -> Path:
        """A relative path is looked for next to the suite file, then under the rootdir
        (GOV.UK Chat's configs say ``input_path: data/x.jsonl`` from the repository root).

        When neither exists the suite-relative path is returned; :meth:`tried` names both
        places for the error. A path no file can have (a symlink loop, a name too long, ``~nouser``) is a
        :class:`SuiteConfigError` naming this file and the field (suite_paths.py).
        """
        p = suite_paths.expand(relative, self.path, self.raw)
        chosen = p
        if not p.is_absolute():
            chosen = beside = self.path.parent / p
            if not suite_paths.exists(beside) and self.rootdir is not None:
                under_root = self.rootdir / p
                chosen = under_root if suite_paths.exists(under_root) else beside
        return suite_paths.check_usable(chosen, relative, self.path, self.raw)

    def tried(self, relative: str | Path) -> list[Path]:
        """Every place :meth:`resolve` looks for a relative path, in order."""
        p = suite_paths.expand(relative, self.path, self.raw)
        if p.is_absolute():
            return [p]
        places = [self.path.parent / p]
        if self.rootdir is not None and (self.rootdir / p) != places[0]:
            places.append(self.rootdir / p)
        return places


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


#: A suite file is a few kilobytes; anything far larger is a mistake or an attack.
MAX_SUITE_BYTES = 4 * 2**20
#: Whatever ``evals_max_json_depth`` allows: pydantic serializes at most 254 levels below
#: a model, and the suite's configuration is serialized inside the run summary.
MAX_SUITE_DEPTH = 200
#: Nodes of the document with every alias expanded: what validation and the reports
#: walk. A "billion laughs" file is a few hundred bytes that expand to ~10^9 nodes.
MAX_SUITE_NODES = 200_000


def _expanded_size(root: yaml.Node, where: str) -> int:
    """Node count with aliases expanded, computed once per shared node (no expansion)."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        ident = id(node)
        if done:
            active.discard(ident)
            total = 1 + sum(sizes[id(child)] for child in _children(node))
            if total > MAX_SUITE_NODES:
                raise SuiteConfigError(
                    f"{where}: the YAML expands to more than {MAX_SUITE_NODES} values "
                    "(anchors and aliases nested too deeply); suite files are refused "
                    "beyond that size"
                )
            sizes[ident] = total
            continue
        if ident in sizes:
            continue
        if ident in active:
            raise SuiteConfigError(f"{where}: the YAML has a recursive alias (an anchor that contains itself)")
        active.add(ident)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


class DuplicateKeyError(yaml.YAMLError):
    """A mapping of the suite file gives the same key twice."""

    def __init__(self, key: Any, line: int, first_line: int) -> None:
        super().__init__(f"duplicate key {key!r} at line {line} (first given at line {first_line})")
        self.key, self.line, self.first_line = key, line, first_line


class _SuiteLoader(yaml.SafeLoader):
    """``SafeLoader`` refusing a key given twice in one mapping.

    PyYAML keeps the last value: ``{min: 0.99}`` followed by ``{min: 0.1}`` would silently
    loosen a gate. Keys brought in by a merge (``<<: *base``) may still be overridden.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key_node, _value in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = self.construct_object(key_node)
                line = key_node.start_mark.line + 1
                if key in first:
                    raise DuplicateKeyError(key, line, first[key])
                first[key] = line
        return super().construct_mapping(node, deep)


def load_yaml_limited(text: str, where: str) -> Any:
    """``yaml.safe_load`` with a size and alias-expansion limit, checked before any
    value is constructed, so a hostile file fails in milliseconds."""
    if len(text) > MAX_SUITE_BYTES:
        raise SuiteConfigError(f"{where}: suite file is {len(text)} characters, over the limit of {MAX_SUITE_BYTES}")
    loader = _SuiteLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise SuiteConfigError(f"{where}: the YAML is nested too deeply") from None
        if node is None:
            return None
        _expanded_size(node, where)
        try:
            return loader.construct_document(node)
        except RecursionError:
            raise SuiteConfigError(f"{where}: the YAML is nested too deeply") from None
    finally:
        loader.dispose()


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_SUITE_BYTES:
            raise SuiteConfigError(
                f"{path}: suite file is {path.stat().st_size} bytes, over the limit of {MAX_SUITE_BYTES}"
            )
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SuiteConfigError(f"{path}: suite file not found") from None
    except UnicodeDecodeError as exc:
        raise SuiteConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        raw = load_yaml_limited(text, str(path))
    except DuplicateKeyError as exc:
        raise SuiteConfigError(
            f"{path}:{exc.line}: duplicate key {exc.key!r} (first given at line {exc.first_line}); "
            "each key may appear once in a mapping"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise SuiteConfigError(f"{where}: invalid YAML: {exc}") from None
    if raw is None:
        raise SuiteConfigError(f"{path}: suite file is empty")
    if not isinstance(raw, dict):
        raise SuiteConfigError(f"{path}: a suite must be a mapping of fields, got {type(raw).__name__}")
    return raw


def _scalar_kind(annotation: Any) -> str | None:
    """"bool", "int" or "float" for fields of those types (optional or not), else None."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        args = {a for a in typing.get_args(annotation) if a is not type(None)}
    else:
        args = {annotation}
    if args == {bool}:
        return "bool"
    if args == {int}:
        return "int"
    if args in ({float}, {int, float}):
        return "float"
    return None


def _scalar_problem(kind: str, value: Any) -> str | None:
    if kind == "bool":
        if not isinstance(value, bool):
            return f"Input should be a valid boolean (true or false), got {value!r} ({type(value).__name__})"
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected a number, got {value!r} ({type(value).__name__})"
    if kind == "int" and not isinstance(value, int):
        return f"expected a whole number, got {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"expected a finite number, got {value!r}"
    return None


def _non_finite(node: Any, path: str) -> Iterable[str]:
    if isinstance(node, float) and not math.isfinite(node):
        yield f"field {path!r}: expected a finite number, got {node!r}"
    elif isinstance(node, Mapping):
        for key, value in node.items():
            yield from _non_finite(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _non_finite(value, f"{path}[{i}]")


def strict_scalar_problems(raw: Mapping[str, Any], model: type[BaseModel], prefix: str = "") -> list[str]:
    """Booleans that are not true/false and numbers that are not finite numbers.

    pydantic's lax mode would read ``"true"``, ``1`` and ``1.0`` as true and ``"0.9"``
    as a number; in a CI gate a quoted or mistyped value must be an error, not a guess.
    """
    problems: list[str] = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        if key not in raw or raw[key] is None:
            continue
        value = raw[key]
        kind = _scalar_kind(info.annotation)
        if kind is not None:
            problem = _scalar_problem(kind, value)
            if problem:
                problems.append(f"field {prefix + key!r}: {problem}")
        elif key == "metrics" and isinstance(value, list):
            for i, entry in enumerate(value):
                if isinstance(entry, Mapping):
                    problems += strict_scalar_problems(entry, MetricSpec, f"{prefix}{key}[{i}].")
        elif isinstance(value, (Mapping, list)):
            problems += _non_finite(value, prefix + key)
    return problems


class TaskCatalog(Protocol):
    """What reading a suite needs to know of the tasks; the task layer above provides it
    (:data:`pytest_evals.tasks.TASK_CATALOG`), so suite files know no task class."""

    def known(self) -> list[str]:
        """Every task name a suite may use."""
        ...

    def config_model(self, name: str, where: str) -> type[SuiteConfig]:
        """The configuration model of task ``name`` (a clear error naming ``where`` if unknown)."""
        ...


def task_from_file_name(path: Path, catalog: TaskCatalog) -> str | None:
    """A config file named after its task (``config/defaults/<task>.yaml``) may omit ``task``."""
    stem = suite_name(path, {})
    tasks = catalog.known()
    if stem in tasks:
        return stem
    raise SuiteConfigError(
        f"{path}: field 'task' is required (e.g. task: {_example(tasks)}), "
        f"or name the file after its task ({', '.join(tasks)})"
    )


def _example(tasks: list[str]) -> str:
    """A task name to show in an error's example: the first one installed."""
    return tasks[0] if tasks else "<task name>"


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
    rootdir: Path | None = None,
    *,
    catalog: TaskCatalog,
) -> Suite:
    """Read, override and validate one suite file (the task's own config model)."""
    raw = dict(raw) if raw is not None else read_yaml(path)
    task_name = raw.get("task")
    named_by_file = task_name is None
    if task_name is None:
        task_name = task_from_file_name(path, catalog)
        raw["task"] = task_name
    if not isinstance(task_name, str):
        raise SuiteConfigError(f"{path}: field 'task' is required (e.g. task: {_example(catalog.known())})")
    config_model = catalog.config_model(task_name, where=str(path))
    name = suite_name(path, raw)
    known = set(config_model.model_fields)
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
    limit = min(max_depth(), MAX_SUITE_DEPTH)
    deep = too_deep_field(raw, limit)
    if deep is not None:
        source = "ini evals_max_json_depth" if limit == max_depth() else "the most a suite's values may nest"
        raise SuiteConfigError(f"{path}: field {deep[0]!r}: nested {deep[1]} levels deep, over the limit of {limit} ({source})")
    problems = strict_scalar_problems(raw, config_model)
    try:
        # The file's path lets a task's checks name it; whether the task came from the file
        # name tells a family's config it reads a file in another tool's layout (GOV.UK's).
        config = config_model.model_validate(raw, context={"suite_path": str(path), "task_from_file_name": named_by_file})
    except ValidationError as exc:
        lines = format_validation_error(str(path), exc).split("\n")
        # One message per field: the strict check's, then pydantic's for the others.
        named = {p.split(":", 1)[0] for p in problems}
        others = [line for line in lines[1:] if line.strip().split(":", 1)[0] not in named]
        raise SuiteConfigError("\n".join([lines[0], *(f"  {p}" for p in problems), *others])) from None
    if problems:
        raise SuiteConfigError("\n".join([f"{path}: invalid suite configuration", *(f"  {p}" for p in problems)]))
    return Suite(path=path, nodeid=nodeid, name=name, config=config, raw=raw, rootdir=rootdir)
