"""BERTScore with idf never forks, even in a process whose threads are busy.

bert_score counts idf tokens in a ``multiprocessing.Pool`` (fork on Linux) when
``nthreads > 0``. A forked child gets a copy of every lock as it was at the fork but
only the forking thread, so a lock another thread held then (Python's, torch's OpenMP
pool, the tokenizers' rayon pool, the allocator's) is never released in the child; and a
Pool whose worker dies or blocks before answering waits for ever (``Pool.map`` does not
notice a lost task). A pytest process that judged offline has such threads: the
embedder's worker thread, torch's intra-op threads, servers. One local run hung there.
So our BERTScore computes the idf weights with bert_score's own ``get_idf_dict`` in this
process (``nthreads=0``): the same counts, no fork.

The situation is reproduced in a fresh interpreter with a timeout: the offline judge's
embedder encoding continuously on its threads, another thread holding a lock, and
BERTScore with idf scored meanwhile. The script records every fork
(``os.register_at_fork``) and compares the scores with bert_score's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a fresh interpreter that loads torch and two models

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import asyncio, json, os, sys, threading

forks = []
os.register_at_fork(before=lambda: forks.append(threading.current_thread().name))

from pytest_evals.llm.offline_judge import get_embedder
from pytest_evals.metrics.reference import Pair, build_metric

embedder = get_embedder()
stop = threading.Event()

def judge_offline():
    # What a run does: many cases' aencode calls coalesced on the embedder's thread.
    async def rounds():
        n = 0
        while not stop.is_set():
            texts = [f"case {n} sentence {i} " * (1 + i % 7) for i in range(32)]
            await asyncio.gather(*(embedder.aencode([t]) for t in texts))
            n += 1
    asyncio.run(rounds())

held = threading.Lock()
held.acquire()  # held by this thread for the whole run: a child forked now would inherit it held
judge = threading.Thread(target=judge_offline, name="offline-judge")
judge.start()
while embedder.encoded_texts < 64:  # the model is loaded and its threads are busy
    threading.Event().wait(0.05)

hyps = ["The cat is sleeping on the sofa .", "Tomorrow it will rain in Lisbon .", "I like to read books at night ."]
refs = ["The cat sleeps on the sofa .", "It will rain in Lisbon tomorrow .", "I love reading books at night ."]
metric = build_metric("bertscore", {"idf": True, "nthreads": 4})
metric.prepare([[r] for r in refs])
ours = [s.result["f1"] for s in metric.score_pairs([Pair(h, (r,)) for h, r in zip(hyps, refs)])]
busy = threading.active_count()

import bert_score
from pytest_evals.metrics.reference.bertscore import embedded_model_path

# bert_score's own arithmetic, its idf counted by its own get_idf_dict (in this process)
_p, _r, f1 = bert_score.score(hyps, refs, model_type=str(embedded_model_path()), num_layers=6, idf=True, nthreads=0)
stop.set()
judge.join()
print(json.dumps({"forks": forks, "ours": ours, "theirs": f1.tolist(), "threads": busy,
                  "encoded": embedder.encoded_texts}))
"""


def test_bertscore_idf_never_forks_while_the_offline_judge_runs() -> None:
    pytest.importorskip("bert_score")
    pytest.importorskip("torch")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, env=env, check=False
        )
    except subprocess.TimeoutExpired as exc:  # the hang this guards against
        pytest.fail(f"BERTScore with idf did not finish in {exc.timeout} s (a forked child blocked?)")
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["threads"] >= 3 and out["encoded"] >= 64  # the situation really was set up
    assert out["forks"] == []  # neither our metric nor the reference forked
    assert out["ours"] == pytest.approx(out["theirs"], abs=1e-6)
