"""Task families: packages that plug tasks, suite files, commands and more into the core.

A family is a module named by an entry point of the group ``pytest_evals.families``
(the built-in ones too, in pytest_evals' own ``pyproject.toml``)::

    [project.entry-points."pytest_evals.families"]
    mytasks = "mypackage.family"

The module may define, all optional:

``TASKS``
    ``{"task name": "module:Class"}``: the ``task:`` values suites may use.
``SUITE_FILES``
    ``{"*.glob": "module:function"}``: files that are suites by their name alone;
    the function takes the file's :class:`~pathlib.Path` and returns the suite's raw
    configuration (a dict, as if read from a YAML suite file).
``COMMANDS``
    module names each offering ``register(subparsers)`` for the ``pytest-evals`` command.
``PLUGINS``
    module names of pytest plugins (options, hooks) the family brings.
``EXPORTS``
    ``{"name": "module:attr"}``: names importable from the ``pytest_evals`` package
    (``from pytest_evals import name``), resolved on first use.
``EXTRAS``
    ``{"library": "extra"}``: the top-level module of a library the family uses and the
    extra of pytest-evals that installs it (``"package[extra]"`` for another
    distribution's extra), so that a missing one is reported with what to install.
``LABEL_WORDS``
    words that, as a case's label, mean the positive class (e.g. ``"triggered"``).
``GROUP_FIELDS``
    ``{"task name": "field"}``: the field of a result's ``data`` that groups the task's
    cases when two runs are compared (``pytest-evals compare`` without ``--group-by``).
``progress_group(result: dict) -> tuple[str, str] | None``
    the running-metric group of a finished case (its JSON result): ``(group, label)``,
    e.g. ``("qa", "acc")``; None leaves the case to the default (its suite, "pass").

The core asks this module; it never names a family itself.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

GROUP = "pytest_evals.families"

#: Suite files every install knows (the core's own YAML suites).
CORE_SUITE_PATTERNS: tuple[str, ...] = ("*.eval.yaml", "*.eval.yml")


def is_suite_path(name: str, patterns: Iterable[str] = CORE_SUITE_PATTERNS) -> bool:
    """Whether the file ``name`` (a path or a node id's file part) matches a suite pattern."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(base, p) for p in patterns)


ProgressGroup = Callable[[Mapping[str, Any]], "tuple[str, str] | None"]


class FamilyError(Exception):
    """A family module whose declarations are not of the documented shape."""


def _strings(module: ModuleType, name: str) -> list[str]:
    value = getattr(module, name, ()) or ()
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise FamilyError(f"{name} must be a sequence of strings, got {value!r}")
    return list(value)


def _string_map(module: ModuleType, name: str) -> dict[str, str]:
    value = getattr(module, name, {}) or {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise FamilyError(f"{name} must map strings to strings, got {value!r}")
    return dict(value)


@dataclass
class Registry:
    """What every installed family contributes, merged (first family wins a name)."""

    #: The families that loaded, in entry point order.
    families: list[str] = field(default_factory=list)
    tasks: dict[str, str] = field(default_factory=dict)
    suite_files: dict[str, str] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)
    exports: dict[str, str] = field(default_factory=dict)
    extras: dict[str, str] = field(default_factory=dict)
    label_words: set[str] = field(default_factory=set)
    group_fields: dict[str, str] = field(default_factory=dict)
    progress_groups: list[ProgressGroup] = field(default_factory=list)
    #: Families that could not be imported: name -> error (shown when a task is missing).
    broken: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, module: ModuleType) -> None:
        # Every declaration is read before any is merged: a malformed family adds nothing.
        tasks = _string_map(module, "TASKS")
        suite_files = _string_map(module, "SUITE_FILES")
        commands = _strings(module, "COMMANDS")
        plugins = _strings(module, "PLUGINS")
        exports = _string_map(module, "EXPORTS")
        extras = _string_map(module, "EXTRAS")
        words = _strings(module, "LABEL_WORDS")
        group_fields = _string_map(module, "GROUP_FIELDS")
        group = getattr(module, "progress_group", None)
        if group is not None and not callable(group):
            raise FamilyError(f"progress_group must be a function, got {group!r}")
        self.families.append(name)
        for target, source in ((self.tasks, tasks), (self.suite_files, suite_files), (self.exports, exports),
                               (self.extras, extras), (self.group_fields, group_fields)):
            for key, value in source.items():
                target.setdefault(key, value)
        self.commands.extend(commands)
        self.plugins.extend(plugins)
        self.label_words.update(w.strip().lower() for w in words)
        if group is not None:
            self.progress_groups.append(group)


@functools.lru_cache(maxsize=1)
def registry() -> Registry:
    """Every family's registration, imported once per process on first use."""
    reg = Registry()
    for ep in entry_points(group=GROUP):
        try:
            module = importlib.import_module(ep.value.partition(":")[0])
            reg.add(ep.name, module)
        except (ImportError, FamilyError) as exc:
            reg.broken[ep.name] = f"{ep.value}: {exc}"
    return reg


def suite_patterns() -> tuple[str, ...]:
    """File name patterns of suite files: the core's YAML suites and the families' files."""
    return CORE_SUITE_PATTERNS + tuple(registry().suite_files)


def suite_file_stem(name: str) -> str:
    """A suite file's name without the fixed ending of its pattern (``x.eval.yaml`` -> ``x``)."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    for pattern in suite_patterns():
        ending = pattern[1:]
        if pattern.startswith("*") and not any(c in ending for c in "*?[") and base.endswith(ending):
            return base[: -len(ending)]
    return base


def implicit_suite(path: Path) -> dict[str, Any] | None:
    """The raw configuration of a file that is a suite by its name alone, else None."""
    from pytest_evals.registry.dotted_names import resolve_name

    for pattern, spec in registry().suite_files.items():
        if fnmatch.fnmatch(path.name, pattern):
            func = resolve_name(spec, f"SUITE_FILES[{pattern!r}] of a family", where=str(path))
            raw: dict[str, Any] = func(path)
            return raw
    return None


def family_export(name: str) -> Any:
    """The value a family exports as ``pytest_evals.<name>``; AttributeError if none does."""
    spec = registry().exports.get(name)
    if spec is None:
        raise AttributeError(f"module 'pytest_evals' has no attribute {name!r}")
    from pytest_evals.registry.dotted_names import resolve_name

    return resolve_name(spec, f"pytest_evals.{name} (EXPORTS of a family)")


def group_field(task: str | None) -> str | None:
    """The ``data`` field a task's family groups its cases by in comparisons, if any."""
    return registry().group_fields.get(task) if task else None


def progress_group(result: Mapping[str, Any]) -> tuple[str, str] | None:
    for group in registry().progress_groups:
        found = group(result)
        if found is not None:
            return found
    return None
