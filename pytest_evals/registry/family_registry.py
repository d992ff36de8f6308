"""Task families: packages that plug tasks, suite files, CLI commands and progress in.

A family is a module named by an entry point of the group ``pytest_evals.registry.family_registry``
(the built-in ones too, in pytest_evals' own ``pyproject.toml``)::

    [project.entry-points."pytest_evals.families"]
    mytasks = "mypackage.family"

The module may define, all optional:

``TASKS``
    ``{"task name": "module:Class"}`` (or a sequence of specs, tried in order).
``SUITE_FILES``
    ``{"*.glob": "module:function"}``: files that are suites by their name alone;
    the function takes the file's :class:`~pathlib.Path` and returns the suite's raw
    configuration (a dict, as if read from a YAML suite file).
``COMMANDS``
    module names each offering ``register(subparsers)`` for the ``pytest-evals`` command.
``PLUGINS``
    module names of pytest plugins (options, hooks) the family brings.
``progress_group(result: dict) -> tuple[str, str] | None``
    the running-metric group of a finished case (its JSON result): ``(group, label)``,
    e.g. ``("qa", "acc")``; None leaves the case to the default (its suite, "pass").

The core asks this module; it never names a family itself.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

GROUP = "pytest_evals.families"

#: The built-in families, used only when the installed metadata predates their entry
#: points (an editable install made before they were added); same modules, same rules.
BUILTIN: Mapping[str, str] = {
    "classification": "pytest_evals.families.classification.family",
    "rag": "pytest_evals.families.rag.family",
    "halueval": "pytest_evals.families.halueval.family",
    "harpia": "pytest_evals.families.harpia.family",
    "redteam": "pytest_evals.families.redteam.family",
}

#: Suite files every install knows (the core's own YAML suites).
CORE_SUITE_PATTERNS: tuple[str, ...] = ("*.eval.yaml", "*.eval.yml")



def is_suite_path(name: str, patterns: Iterable[str] = CORE_SUITE_PATTERNS) -> bool:
    """Whether the file ``name`` (a path or a node id's file part) matches a suite pattern."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(base, p) for p in patterns)


ProgressGroup = Callable[[Mapping[str, Any]], "tuple[str, str] | None"]


@dataclass
class Registry:
    """What every installed family contributes, merged (first family wins a name)."""

    tasks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    suite_files: dict[str, str] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)
    progress_groups: list[ProgressGroup] = field(default_factory=list)
    #: Families that could not be imported: name -> error (shown when a task is missing).
    broken: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, module: ModuleType) -> None:
        for task, spec in dict(getattr(module, "TASKS", {}) or {}).items():
            specs = (spec,) if isinstance(spec, str) else tuple(spec)
            self.tasks.setdefault(str(task), specs)
        for pattern, func in dict(getattr(module, "SUITE_FILES", {}) or {}).items():
            self.suite_files.setdefault(str(pattern), str(func))
        self.commands.extend(str(c) for c in getattr(module, "COMMANDS", ()) or ())
        self.plugins.extend(str(p) for p in getattr(module, "PLUGINS", ()) or ())
        group = getattr(module, "progress_group", None)
        if callable(group):
            self.progress_groups.append(group)


def _family_modules() -> list[tuple[str, str]]:
    found = [(ep.name, ep.value) for ep in entry_points(group=GROUP)]
    names = {name for name, _ in found}
    return found + [(name, module) for name, module in BUILTIN.items() if name not in names]


@functools.lru_cache(maxsize=1)
def registry() -> Registry:
    """Every family's registration, imported once per process on first use."""
    reg = Registry()
    for name, target in _family_modules():
        try:
            module = importlib.import_module(target.partition(":")[0])
        except ImportError as exc:
            reg.broken[name] = f"{target}: {exc}"
            continue
        reg.add(name, module)
    return reg


def suite_patterns() -> tuple[str, ...]:
    """File name patterns of suite files: the core's YAML suites and the families' files."""
    return CORE_SUITE_PATTERNS + tuple(registry().suite_files)


def implicit_suite(path: Path) -> dict[str, Any] | None:
    """The raw configuration of a file that is a suite by its name alone, else None."""
    from pytest_evals.registry.dotted_names import resolve_name

    for pattern, spec in registry().suite_files.items():
        if fnmatch.fnmatch(path.name, pattern):
            func = resolve_name(spec, f"SUITE_FILES[{pattern!r}] of a family", where=str(path))
            raw: dict[str, Any] = func(path)
            return raw
    return None


def task_specs(name: str) -> Sequence[str] | None:
    return registry().tasks.get(name)


def progress_group(result: Mapping[str, Any]) -> tuple[str, str] | None:
    for group in registry().progress_groups:
        found = group(result)
        if found is not None:
            return found
    return None
