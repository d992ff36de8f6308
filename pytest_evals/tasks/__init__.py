"""Registry of evaluation kinds (tasks), imported lazily so collection stays cheap.

Task families register their tasks through entry points (see
:mod:`pytest_evals.registry.family_registry`); :func:`register_task` adds one from a conftest or a
script. A name registered here wins over a family's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_evals.model.errors import SuiteConfigError

if TYPE_CHECKING:
    from pytest_evals.suites.suite_config import SuiteConfig
    from pytest_evals.tasks.task_contract import Task

#: task name -> "module:Class", added with :func:`register_task`.
TASKS: dict[str, str] = {}


def register_task(name: str, target: str | type[Task]) -> None:
    """Make ``task: name`` available in suite files (a class or "module:Class")."""
    if isinstance(target, str):
        TASKS[name] = target
    else:
        TASKS[name] = f"{target.__module__}:{target.__qualname__}"


def known_tasks() -> list[str]:
    from pytest_evals.registry.family_registry import registry

    return sorted({*TASKS, *registry().tasks})


def get_task_class(name: str, where: str = "") -> type[Task]:
    from pytest_evals.registry.family_registry import registry

    prefix = f"{where}: " if where else ""
    spec = TASKS[name] if name in TASKS else registry().tasks.get(name)
    if spec is None:
        broken = "".join(f"\n  family {fam!r} could not be loaded: {err}" for fam, err in registry().broken.items())
        raise SuiteConfigError(f"{prefix}unknown task {name!r}; known tasks: {', '.join(known_tasks())}{broken}")
    from pytest_evals.registry.dotted_names import ResolveError, resolve_name

    try:
        cls: type[Task] = resolve_name(spec, f"task {name!r}: class")
    except ResolveError as exc:
        raise SuiteConfigError(f"{prefix}task {name!r} cannot be loaded: {exc}") from exc
    return cls


class _Catalog:
    """The registry as suite loading sees it (:class:`~pytest_evals.suites.suite_config.TaskCatalog`)."""

    def known(self) -> list[str]:
        return known_tasks()

    def config_model(self, name: str, where: str) -> type[SuiteConfig]:
        return get_task_class(name, where=where).config_model


#: Pass as ``catalog=`` to :func:`~pytest_evals.suites.suite_config.load_suite`.
TASK_CATALOG = _Catalog()
