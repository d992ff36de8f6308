"""Issue 13: every model the run loads goes through one process-wide loader.

BERTScore's scorer and the offline judge's sentence-transformers embedder used to load in
two threads under separate locks, importing transformers concurrently
(``ImportError: cannot import name 'AutoTokenizer'``). The race needs a fresh
interpreter, so the check runs in a subprocess: 20 rounds of both loads started together
from two threads (the first round also imports the libraries), each round on freshly
forgotten models, asserting that both load and that no two loads overlapped in time.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pytest_evals.llm import local_weights as models

ROOT = Path(__file__).parents[2]

SCRIPT = r"""
import json, threading
from pytest_evals.llm import local_weights as models
from pytest_evals.llm.offline_judge import Embedder
from pytest_evals.metrics.reference import build_metric

errors, rounds = [], 20
for n in range(rounds):
    models.forget()
    bert = build_metric("bertscore", {"device": None})
    embedder = Embedder()
    barrier = threading.Barrier(2)
    loaded = {}

    def load(name, fn):
        barrier.wait()
        try:
            loaded[name] = fn()
        except BaseException as exc:
            errors.append(f"round {n}: {name}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=load, args=("bertscore", bert.scorer)),
               threading.Thread(target=load, args=("embedder", lambda: embedder.model))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if len(loaded) == 2:
        # the two really work after a concurrent load
        bert.score_single(["a cat"], ["a cat sat"])
        embedder.encode(["a cat"])
loads = [(repr(r.key[0]), r.started, r.finished) for r in models.LOADS]
print(json.dumps({"errors": errors, "loads": loads}))
"""


@pytest.mark.slow  # a fresh interpreter loading two models 20 times
def test_bertscore_and_the_embedder_load_concurrently_20_times_without_error() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["errors"] == []
    loads = report["loads"]
    assert len(loads) == 40
    assert sum(1 for key, _, _ in loads if "bertscore" in key) == 20
    # serialised: each load starts after the previous one finished
    spans = sorted((start, end) for _, start, end in loads)
    assert all(prev_end <= start for (_, prev_end), (start, _) in itertools.pairwise(spans))


def test_one_lock_serialises_loads_and_caches_by_key() -> None:
    active, overlaps, calls = [0], [0], []
    guard = threading.Lock()

    def factory(name: str) -> str:
        with guard:
            active[0] += 1
            overlaps[0] = max(overlaps[0], active[0])
        threading.Event().wait(0.02)
        calls.append(name)
        with guard:
            active[0] -= 1
        return name

    keys = [("test-loader", i % 4) for i in range(16)]
    threads = [threading.Thread(target=models.load_model, args=(k, lambda k=k: factory(str(k)))) for k in keys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps[0] == 1
    assert sorted(calls) == sorted({str(k) for k in keys})  # one build per key
    for k in set(keys):
        models.forget(k)
        assert not models.is_loaded(k)
