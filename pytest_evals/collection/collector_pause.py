"""The cyclic garbage collector paused while many long-lived objects are built: a suite
file's cases becoming items, a red-team run's prompt files loading.

Collecting a suite builds tens of thousands of objects that all live to the end of the
run (rows of the data file's index, case refs, jobs, items) and next to no garbage:
refcounting frees the temporaries, and nothing there makes cycles. Each of them counts
towards the collector's thresholds, so collecting one 2,000-case HaluEval sample
triggered ~30 young and a full collection, the full one walking every module and class
imported so far for nothing: 25-30 ms of a cached rerun's 1.8 s CPU. With the collector
paused the built objects are looked at once, by the first young collection after the
file (and, in large runs, by the pass before the heap freeze, worker/heap_freeze.py).

pytest consumes a collector's ``collect()`` in one go (``list(...)``), so the pause
covers one suite file's collection and ends with it, however it ends.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """``gc.disable()`` for the block; the collector's earlier state afterwards (it stays
    off if something else had turned it off)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
