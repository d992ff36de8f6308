"""One process-wide loader for every model a run loads (BERTScore, sentence embedders).

Hugging Face's libraries are not safe to import or initialise from two threads at once:
``transformers`` builds its lazy module table on first import, and a second thread
importing ``bert_score`` while another imports ``sentence_transformers`` can see it half
built (``ImportError: cannot import name 'AutoTokenizer'``). So every model load in the
process, including the imports it triggers, goes through :func:`load_model`, which holds
one re-entrant lock and remembers each loaded model by key (objects that own their
model, like the offline judge's ``Embedder``, take the same lock through
:func:`exclusive_load` and keep the model themselves). Loads are rare and slow;
serialising them costs nothing a run would notice, and uses of a loaded model are not
serialised.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

#: Re-entrant: a loader may load another model (a scorer its tokenizer) under the lock.
_LOCK = threading.RLock()
_MODELS: dict[Hashable, Any] = {}


@dataclass(frozen=True)
class LoadRecord:
    """When one load ran (monotonic seconds), for tests and diagnostics."""

    key: Hashable
    started: float
    finished: float
    thread: str


#: Every load performed in this process, in order (bounded: loads are few).
LOADS: list[LoadRecord] = []
_MAX_RECORDS = 1000


def load_model(key: Hashable, factory: Callable[[], T]) -> T:
    """The model stored under ``key``, built by ``factory()`` once per process.

    ``factory`` runs under the process-wide lock, so imports and weight loading never
    overlap with another load. A factory that raises stores nothing (the next call
    tries again)."""
    try:
        found: T = _MODELS[key]
        return found
    except KeyError:
        pass
    with _LOCK:
        if key in _MODELS:
            cached: T = _MODELS[key]
            return cached
        started = time.monotonic()
        model = factory()
        _MODELS[key] = model
        if len(LOADS) < _MAX_RECORDS:
            LOADS.append(LoadRecord(key, started, time.monotonic(), threading.current_thread().name))
        return model


@contextmanager
def exclusive_load(key: Hashable) -> Iterator[None]:
    """Hold the process-wide lock for a load whose result the caller keeps itself
    (an object that owns its model, as the offline judge's ``Embedder`` does)."""
    with _LOCK:
        started = time.monotonic()
        yield
        if len(LOADS) < _MAX_RECORDS:
            LOADS.append(LoadRecord(key, started, time.monotonic(), threading.current_thread().name))


def loading() -> threading.RLock:
    """The lock itself, for code that must import a model library outside a load."""
    return _LOCK


def is_loaded(key: Hashable) -> bool:
    return key in _MODELS


def forget(key: Hashable | None = None) -> None:
    """Drop one stored model (or all): the next :func:`load_model` builds it again."""
    with _LOCK:
        if key is None:
            _MODELS.clear()
        else:
            _MODELS.pop(key, None)
