"""Batch mode: send a run's uncached model requests through the provider's Batch API.

A run with ``--evals-batch`` first *gathers*: every case is evaluated with a client
that, instead of asking the endpoint, records the uncached request and stops the case
(:mod:`.batch_gate`, the hook batch mode installs in ``llm/io_hooks.py``). The recorded
requests become JSONL batch input lines (:mod:`.lines`), keyed by their cache keys, are
uploaded and submitted (:mod:`.service`), and the answers fill the response cache. Cases
that need a second answer after the first (a judge re-ask, a generation then its
judging) are found by the next gather round. The ordinary run then scores everything
from the cache. A ledger in the cache directory (:mod:`.ledger`) records each batch
before it is created, so a killed run re-attaches to it instead of paying twice.

This package knows no runner: the rounds that evaluate cases (the batch phase) and
their pytest wiring live with the worker (``worker/batch_phase.py``,
``worker/batch_plugin.py``).
"""

from __future__ import annotations
