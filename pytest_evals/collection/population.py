"""Each suite's population: how many cases it defines, how many were collected, and how
many pytest's selection kept.

A suite's gates speak for the cases its file defines. ``-k``, ``-m``, ``--deselect``,
``--lf`` or a command-line sample (``--evals-sample``) run fewer, and a verdict on those
alone would claim what was never measured. So every process that collects counts, per
suite:

- ``defined``: the cases the suite file defines (its own ``sample:`` applied, the
  command line's not: the file's sample is part of the suite's definition);
- ``collected``: the case items its file yielded (the command line's sample applied),
  counted inside :class:`~pytest_evals.collection.suite_items.SuiteFile` before any
  plugin filters them (``--lf`` trims a file's items in place without
  ``pytest_deselected``, so counting collection reports would miss them);
- ``selected``: the case items left in the session after every
  ``pytest_collection_modifyitems`` (what is sent to run).

The xdist controller collects nothing: each worker puts its counts in
``config.workeroutput`` and the controller reads them in ``pytest_testnodedown``
(every worker collects the same items, or xdist aborts the run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pytest

from pytest_evals.collection.suite_loader import open_suite, suite_cache
from pytest_evals.collection.xdist_blocks import is_case_nodeid
from pytest_evals.model.errors import EvalsError

#: Key of the counts in an xdist worker's ``workeroutput``.
WORKEROUTPUT_KEY = "pytest_evals_population"


@dataclass
class SuitePopulation:
    """One suite's counts in one process (see the module docstring)."""

    defined: int
    collected: int
    selected: int = 0
    #: A command-line option (``--evals-sample``, ``--evals-set sample=``) sampled it
    #: and the cases its file defines could not be counted (``defined`` is unknown).
    sampled: bool = False

    @property
    def deselected(self) -> int:
        return max(0, self.collected - self.selected)

    @property
    def sampled_out(self) -> int:
        return max(0, self.defined - self.collected)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SuitePopulation:
        return cls(
            defined=int(data["defined"]),
            collected=int(data["collected"]),
            selected=int(data.get("selected", 0)),
            sampled=bool(data.get("sampled", False)),
        )


def populations_from_json(data: Any) -> dict[str, SuitePopulation]:
    """The counts a worker sent (empty when it sent none)."""
    if not isinstance(data, Mapping):
        return {}
    return {str(suite): SuitePopulation.from_json(counts) for suite, counts in data.items()}


class PopulationCounter:
    """Counts each suite's population in this process (a plain run or an xdist worker)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.suites: dict[str, SuitePopulation] = {}

    def record_collected(self, suite: str, collected: int, defined: int | None, sampled: bool) -> None:
        """Called by a suite file once it yielded its items."""
        self.suites[suite] = SuitePopulation(
            defined=max(collected, defined if defined is not None else collected),
            collected=collected,
            sampled=sampled,
        )

    # After every pytest_collection_modifyitems (the selection is final), before the
    # aggregator's own pytest_collection_finish reads the counts.
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        selected: Counter[str] = Counter(
            item.nodeid.partition("::")[0] for item in session.items if is_case_nodeid(item.nodeid)
        )
        for suite, counts in self.suites.items():
            counts.selected = selected.get(suite, 0)
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[WORKEROUTPUT_KEY] = {suite: c.to_json() for suite, c in self.suites.items()}


POPULATION_KEY = pytest.StashKey[PopulationCounter]()


def population_counter(config: pytest.Config) -> PopulationCounter:
    counter = config.stash.get(POPULATION_KEY, None)
    if counter is None:
        counter = PopulationCounter(config)
        config.stash[POPULATION_KEY] = counter
    return counter


def defined_count(config: pytest.Config, path: Any, nodeid: str) -> tuple[int | None, bool]:
    """(cases the suite file defines, whether the command line sampled it without that
    count being known).

    Only a suite whose task samples and whose ``sample`` the command line set is read a
    second time, without that override; for every other suite the collected items are
    its definition (None)."""
    cache = suite_cache(config)
    try:
        suite, _task = open_suite(config, path, nodeid)
    except EvalsError:
        return None, False
    if not cache.sample_overrides(suite):
        return None, False
    try:
        return cache.count_as_defined(path, nodeid), False
    except EvalsError:
        # It loaded with the override; without it the same data is read, so this is
        # rare. The suite is still known to be sampled.
        return None, True


def sample_option_error(config: pytest.Config, suite_ids: Iterable[str]) -> str | None:
    """Why ``--evals-sample`` cannot apply to this run's suites (None: it can).

    The option promises a sample of every suite; a suite whose task cannot sample
    would silently run in full, so the run is refused instead."""
    size = config.getoption("evals_sample", None)
    if size is None:
        return None
    refused: dict[str, list[str]] = {}
    for suite_id in dict.fromkeys(suite_ids):
        try:
            suite, _task = open_suite(config, config.rootpath / suite_id, suite_id)
        except EvalsError:
            continue  # reported as the suite's own error
        if not suite_cache(config).can_sample(suite):
            refused.setdefault(str(suite.config.task), []).append(suite_id)
    if not refused:
        return None
    named = "; ".join(f"{task} ({', '.join(ids)})" for task, ids in sorted(refused.items()))
    return (
        f"--evals-sample {size}: these suites' tasks cannot sample, so they would run in full: "
        f"{named}. Run them without --evals-sample, or select only suites whose task samples."
    )
