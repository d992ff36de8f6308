"""Each suite file is read once per pytest process: overrides applied, task built.

Collection, aggregation and the reports all need a suite's configuration and task;
they ask :func:`open_suite`, which reads the file the first time and hands out the
same :class:`~pytest_evals.suites.suite_config.Suite` and task afterwards (a broken suite raises the
same error each time).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.model.errors import EvalsError, SuiteConfigError

if TYPE_CHECKING:
    from pytest_evals.suites.suite_config import Override, Suite
    from pytest_evals.tasks.task_contract import Task

SUITES_KEY = pytest.StashKey["SuiteCache"]()


def overrides_from_options(config: pytest.Config) -> list[Override]:
    """The suite field overrides the command line asks for, in the order given."""
    # The suite model (pydantic, yaml) loads only when overrides or suites are used.
    named = ("evals_generate", "evals_n_runs", "evals_sample", "evals_seed")
    if all(config.getoption(name, None) is None for name in named) and not config.getoption("evals_set", None):
        return []
    from pytest_evals.suites.suite_config import Override

    out: list[Override] = []
    generate = config.getoption("evals_generate", None)
    if generate is not None:
        out.append(Override("generate", bool(generate), only_if_known=True))
    for name in ("n_runs", "sample", "seed"):
        value = config.getoption(f"evals_{name}", None)
        if value is not None:
            out.append(Override(name, value, only_if_known=True))
    for text in config.getoption("evals_set", None) or []:
        try:
            out.append(Override.parse(text))
        except SuiteConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
    return out


class SuiteCache:
    """Suites of this process by node id (one per pytest process, in the config's stash)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.overrides = overrides_from_options(config)
        #: ids of the overrides that reached at least one suite (typos are reported).
        self.used_overrides: set[int] = set()
        self._loaded: dict[str, tuple[Suite, Task[Any]] | EvalsError] = {}

    def open(self, path: Path, nodeid: str) -> tuple[Suite, Task[Any]]:
        loaded = self._loaded.get(nodeid)
        if loaded is None:
            loaded = self._load(path, nodeid)
            self._loaded[nodeid] = loaded
        if isinstance(loaded, EvalsError):
            raise loaded
        return loaded

    def _load(
        self, path: Path, nodeid: str, overrides: list[Override] | None = None
    ) -> tuple[Suite, Task[Any]] | EvalsError:
        from pytest_evals.registry.family_registry import implicit_suite
        from pytest_evals.suites.suite_config import load_suite
        from pytest_evals.targets.target_kinds import command_limit_problems
        from pytest_evals.tasks import TASK_CATALOG, get_task_class

        # Another set of overrides is a second reading (the suite as its file defines
        # it): it must not mark this run's overrides used.
        used = self.used_overrides if overrides is None else None
        try:
            from pytest_evals.collection.variant_items import load_with_variants

            with_variants = load_with_variants(
                self.config, path, nodeid, self.overrides if overrides is None else overrides, used
            )
            if with_variants is not None:
                return with_variants
            suite = load_suite(
                path, nodeid, self.overrides if overrides is None else overrides,
                implicit_suite(path), used, rootdir=self.config.rootpath, catalog=TASK_CATALOG,
            )
            problems = command_limit_problems(suite.config.target)
            if problems:
                raise SuiteConfigError("\n".join([f"{path}: invalid suite configuration", *(f"  {p}" for p in problems)]))
            return suite, get_task_class(suite.config.task)(suite)
        except EvalsError as exc:
            return exc

    # -- sampling from the command line ------------------------------------------------
    @staticmethod
    def can_sample(suite: Suite) -> bool:
        """Whether the suite's task has a ``sample`` field (draws a sample of its cases)."""
        return "sample" in type(suite.config).model_fields

    def sample_overrides(self, suite: Suite) -> list[Override]:
        """The command line's overrides of this suite's ``sample`` (``--evals-sample``,
        ``--evals-set [SUITE:]sample=...``); none for a task that cannot sample."""
        if not self.can_sample(suite):
            return []
        return [
            ov for ov in self.overrides
            if ov.key.split(".", 1)[0] == "sample" and ov.suite in (None, suite.name)
        ]

    def count_as_defined(self, path: Path, nodeid: str) -> int:
        """How many cases the suite file defines: read again without the command line's
        ``sample`` overrides (raises the suite's EvalsError)."""
        kept = [ov for ov in self.overrides if ov.key.split(".", 1)[0] != "sample"]
        loaded = self._load(path, nodeid, kept)
        if isinstance(loaded, EvalsError):
            raise loaded
        return sum(1 for _ in loaded[1].case_refs())


def suite_cache(config: pytest.Config) -> SuiteCache:
    cache = config.stash.get(SUITES_KEY, None)
    if cache is None:
        cache = SuiteCache(config)
        config.stash[SUITES_KEY] = cache
    return cache


def open_suite(config: pytest.Config, path: Path, nodeid: str) -> tuple[Suite, Task[Any]]:
    """The suite at ``path`` (node id ``nodeid``) and its task, read once per process."""
    return suite_cache(config).open(path, nodeid)
