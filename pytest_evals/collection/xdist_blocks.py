"""Deterministic assignment of evaluation cases to xdist workers.

xdist's default ``load`` scheduling hands each worker a few items at a time, so a
worker cannot start the model calls of cases it will run later. For suite items we
send every worker one contiguous block of cases up front, computed by a rule the
workers can compute too (:func:`owned_block`); each worker then prefetches exactly its
own cases and no request is made twice. Plain Python tests keep xdist's load balancing.

When a worker dies, xdist hands the rest of its block to another worker (the
replacement, ``gw2`` after ``gw0``, or a survivor). Workers therefore never assume
which block is theirs from their id: a worker prefetches, from the first case it is
sent, the rest of that case's block (:func:`block_rest`), which is what the scheduler
sends it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_evals.registry.family_registry import is_suite_path

_WORKER_NUM = re.compile(r"(\d+)$")

#: Set in ``workerinput`` when the controller schedules suite cases in blocks.
BLOCKS_FLAG = "pytest_evals_blocks"


#: Patterns added by ``--evals-suite-pattern`` / ini ``evals_suite_patterns`` for this
#: process (set in pytest_configure on the controller and on every worker alike).
_extra_patterns: tuple[str, ...] = ()


def case_file_patterns() -> tuple[str, ...]:
    """Suite file patterns: the core's and the families' (:func:`families.suite_patterns`),
    then the user's ``--evals-suite-pattern`` ones."""
    from pytest_evals.registry.family_registry import suite_patterns

    return suite_patterns() + _extra_patterns


def set_extra_patterns(patterns: Sequence[str]) -> tuple[str, ...]:
    """Replace the extra suite patterns; returns the previous ones (to restore them)."""
    global _extra_patterns
    previous = _extra_patterns
    _extra_patterns = tuple(dict.fromkeys(patterns))
    _is_case_file.cache_clear()
    return previous


def is_case_nodeid(nodeid: str) -> bool:
    return _is_case_file(nodeid.split("::", 1)[0])


@functools.lru_cache(maxsize=1024)
def _is_case_file(file_part: str) -> bool:
    # Asked for every item and report of a run: a few distinct files, 35,000 fnmatch calls.
    return is_suite_path(file_part, case_file_patterns())


def xdist_loaded(config: pytest.Config) -> bool:
    """xdist is loaded: as "xdist" by its entry point, as "xdist.plugin" by ``-p
    xdist.plugin`` (plugin autoloading off). Without the blocks, workers cannot prefetch."""
    return any(config.pluginmanager.hasplugin(name) for name in ("xdist", "xdist.plugin"))


def worker_number(worker_id: str) -> int:
    m = _WORKER_NUM.search(worker_id)
    return int(m.group(1)) if m else 0


def owned_block(n_cases: int, worker: int, n_workers: int) -> range:
    """Positions (among case items, in collection order) that ``worker`` runs."""
    return range(worker * n_cases // n_workers, (worker + 1) * n_cases // n_workers)


def block_rest(n_cases: int, position: int, n_workers: int) -> range:
    """From ``position`` to the end of the block that holds it (``n_workers`` blocks)."""
    for worker in range(n_workers):
        block = owned_block(n_cases, worker, n_workers)
        if position in block:
            return range(position, block.stop)
    return range(position, n_cases)


def make_scheduler_class() -> type[Any]:
    from xdist.scheduler import LoadScheduling

    class EvalsScheduling(LoadScheduling):
        """LoadScheduling, except that case items go out as one block per worker."""

        def schedule(self) -> None:
            if self.collection is not None or not self.collection_is_completed:  # type: ignore[has-type]
                return super().schedule()
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return None
            collection: Sequence[str] = next(iter(self.node2collection.values()))
            cases = [i for i, nodeid in enumerate(collection) if is_case_nodeid(nodeid)]
            if not cases:
                return super().schedule()
            self.collection = list(collection)
            if self.maxschedchunk is None:  # type: ignore[has-type]
                # LoadScheduling.schedule() sets this default; check_schedule() needs it.
                self.maxschedchunk = len(collection)
            case_set = set(cases)
            self.pending[:] = [i for i in range(len(collection)) if i not in case_set]
            nodes = sorted(self.nodes, key=lambda node: worker_number(node.gateway.id))
            for k, node in enumerate(nodes):
                block = [cases[j] for j in owned_block(len(cases), k, len(nodes))]
                if block:
                    self.node2pending[node].extend(block)
                    node.send_runtest_some(block)
            for node in nodes:
                self.check_schedule(node)
            return None

    return EvalsScheduling


class BlockScheduling:
    """Controller side of the block scheduling (registered by the plugin when xdist is on)."""

    @staticmethod
    def wanted(config: pytest.Config) -> bool:
        """xdist is loaded and ini ``evals_partition`` leaves the blocks on."""
        return xdist_loaded(config) and bool(config.getini("evals_partition"))

    @staticmethod
    def _blocks(config: pytest.Config) -> bool:
        return config.getoption("dist", "no") == "load"

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        # Workers cannot see --dist; tell them their cases come in whole blocks.
        if self._blocks(node.config):
            node.workerinput[BLOCKS_FLAG] = True

    @pytest.hookimpl(trylast=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if not self._blocks(config):
            return None
        return make_scheduler_class()(config, log)
