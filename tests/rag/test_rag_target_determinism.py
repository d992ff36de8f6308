"""The example RAG target answers the same in every process (xdist workers included)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EVAL_SUITES = Path(__file__).resolve().parents[2] / "eval_suites"

# Ranks every chunk for every question and prints the exact scores and answers.
PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from targets import rag_target
chunks, docs, idf, avg_len = rag_target._index()
with open(sys.argv[2], encoding="utf-8") as fh:
    questions = [json.loads(line) for line in fh if line.strip()]
for q in questions:
    terms = rag_target._terms(str(q["question"]))
    print(repr([rag_target._bm25(terms, d, idf, avg_len) for d in docs]))
    print(json.dumps(rag_target.answer(q), sort_keys=True))
"""


def test_scores_and_answers_do_not_depend_on_the_hash_seed() -> None:
    outputs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(EVAL_SUITES), str(EVAL_SUITES / "data" / "rag_answers_questions.jsonl")],
            env=env, capture_output=True, text=True, check=True,
        )
        assert done.stdout.count("\n") >= 10
        outputs.add(done.stdout)
    # Before the fix, BM25 summed a set's terms in hash order: scores differed per seed.
    assert len(outputs) == 1
