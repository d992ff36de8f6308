"""Keep the cyclic garbage collector off a large evaluation run's long-lived objects.

A run of 35,000 cases holds the collected tree (items, case refs) and, as it goes,
every test report pytest keeps for its summary. None of it is garbage before the run
ends, yet each full collection walks all of it again, and pytest ends a session with
two more full collections (to surface exceptions raised in finalizers).

So, in runs with at least :data:`MIN_CASES` cases: after collection the tree is frozen
(``gc.freeze``: moved out of the collector's view); every few thousand cases, and at
unconfigure before pytest's own passes, whatever is still alive is frozen too, after a
young-generation pass. Measured at 35,000 cases: full collections during the run
2.4 -> 0.6 s, pytest's closing passes 2.1 s -> nothing measurable.
The last cleanup of the session thaws everything, so a process that goes on after
``pytest.main`` (an IDE, pytester) collects it as usual. The cost: garbage that was
already old when the run ended is collected at that thaw rather than in pytest's passes,
which in a ``pytest`` command means in the interpreter's closing collection, after the
summary (1.8 s after a 6,000-item run's last line, at a load average of 11 on 2 CPUs;
0.1-0.2 s with the freeze). So the
thaw also asks for the heap to be frozen again when the process exits: the interpreter
then frees what it can without walking it (as a process ending does, the memory goes
back to the system with it). Exit-time clean-ups registered with ``atexit`` or
``weakref.finalize`` (temporary directories) run as before.
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Callable

import pytest

#: Runs with at least this many cases freeze their long-lived objects.
MIN_CASES = 1_000
#: ...and again after every this many test reports (three per case).
REFREEZE_EVERY_REPORTS = 6_000


class HeapFreezer:
    """Registered once per pytest process by the plugin (controller and workers alike)."""

    def __init__(self, config: pytest.Config, results_count: Callable[[], int]) -> None:
        # Registered during our pytest_configure, which runs before pytest's
        # unraisableexception plugin registers its cleanup: cleanups run last-in
        # first-out, so the thaw comes after pytest's final collection.
        self._results_count = results_count
        self.frozen = False
        self._reports = 0
        config.add_cleanup(self.thaw)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from pytest_evals.collection.xdist_blocks import is_case_nodeid

        if sum(is_case_nodeid(it.nodeid) for it in session.items) >= MIN_CASES:
            # A pass over the youngest generation, not a full one: the garbage made since
            # the last collection is not frozen with the tree. The older generations
            # hold the startup heap (imports, plugins) and the collected tree, which the
            # first young pass after each suite file's collection looked at
            # (collection/collector_pause.py), with next to no garbage (28 objects
            # measured, HaluEval 2,000 cases): a full pass walked all of it for them,
            # 35 ms of a cached 2,000-case run's 1.8 s CPU, and a pass over the middle
            # generation the whole tree again, 8-12 ms.
            gc.collect(0)
            gc.freeze()
            self.frozen = True

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # The reports pytest keeps pile up during the run: freeze them as they come.
        self._reports += 1
        if self._reports % REFREEZE_EVERY_REPORTS == 0 and (self.frozen or self._results_count() >= MIN_CASES):
            gc.collect(1)
            gc.freeze()
            self.frozen = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        # An xdist controller collects nothing; it holds the results and reports.
        if self.frozen or self._results_count() >= MIN_CASES:
            gc.collect(1)
            gc.freeze()
            self.frozen = True

    def thaw(self) -> None:
        if self.frozen:
            gc.unfreeze()
            self.frozen = False
            _freeze_at_exit()


def _freeze_at_exit() -> None:
    """Once per process: at exit, freeze the heap before the interpreter's last collections."""
    global _AT_EXIT
    if not _AT_EXIT:
        _AT_EXIT = True
        atexit.register(gc.freeze)


_AT_EXIT = False
