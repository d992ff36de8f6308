"""``pytest-evals compare`` on two full-size HaluEval-shaped runs: time and McNemar check.

    python bench/bench_compare.py [--cases 34507] [--discordant 13000] [--repeat 3]

Writes two ``results.jsonl`` files of ``--cases`` records each, shaped like a HaluEval
run's (suite, case_id, status, data with task_type, details with a ~1.5 kB prompt and
the judge's reply), with exactly ``--discordant`` items right in one run and wrong in
the other. Times the whole ``pytest-evals compare`` command as a separate process
(start-up included; goal: under 2 s) against a floor measured around it: a bare Python
process that only parses both files with ``json.loads`` (what any reader of the files
must at least do). The ratio is the steadier figure on a shared machine. Also checks the
McNemar p-value against ``scipy.stats.binomtest`` (goal: equal to 1e-12).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASKS = ("qa", "dialogue", "summarization", "general")
PROMPT = "You are a hallucination detector. " * 45


def write_runs(folder: Path, cases: int, discordant: int, seed: int = 5) -> tuple[Path, Path, int, int]:
    rng = random.Random(seed)
    flips = set(rng.sample(range(cases), discordant))
    only_a = only_b = 0
    paths = (folder / "a.jsonl", folder / "b.jsonl")
    with paths[0].open("w", encoding="utf-8") as fa, paths[1].open("w", encoding="utf-8") as fb:
        for i in range(cases):
            task = TASKS[i % len(TASKS)]
            right_a = rng.random() < 0.6
            right_b = (not right_a) if i in flips else right_a
            only_a += right_a and not right_b
            only_b += right_b and not right_a
            for fh, right in ((fa, right_a), (fb, right_b)):
                record = {
                    "suite": "eval_suites/halueval.eval.yaml", "task": "halueval", "case_id": f"{task}-{i}",
                    "source": f"qa_data.json:{i}", "index": i, "status": "passed" if right else "failed",
                    "scores": {"correct": 1.0 if right else 0.0},
                    "data": {"task_type": task, "expected": "Yes", "predicted": "Yes" if right else "No"},
                    "details": {"prompt": PROMPT + str(i), "reply": "Yes" if right else "No"},
                    "message": None, "error_kind": None, "usage": {"requests": 1}, "duration": 0.01,
                }
                fh.write(json.dumps(record) + "\n")
    return paths[0], paths[1], only_a, only_b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=34_507)
    parser.add_argument("--discordant", type=int, default=13_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from scipy.stats import binomtest

    with tempfile.TemporaryDirectory() as tmp:
        a, b, only_a, only_b = write_runs(Path(tmp), args.cases, args.discordant)
        out = Path(tmp) / "cmp.json"
        floor_code = (
            "import json, sys\n"
            "for p in sys.argv[1:]:\n"
            "    with open(p, 'rb') as fh:\n"
            "        [json.loads(line) for line in fh]\n"
        )
        commands = {
            "compare": [sys.executable, "-m", "pytest_evals.cli.main", "compare", str(a), str(b), "--json", str(out)],
            "floor": [sys.executable, "-c", floor_code, str(a), str(b)],
        }
        timings: dict[str, list[float]] = {"compare": [], "floor": []}
        cpu: dict[str, list[float]] = {"compare": [], "floor": []}
        for _ in range(args.repeat):
            for name, command in commands.items():  # alternating, so load hits both alike
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
                timings[name].append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        times = timings["compare"]
        result = json.loads(out.read_text(encoding="utf-8"))["comparisons"]["all"]
    expected = binomtest(only_a, only_a + only_b, 0.5).pvalue
    error = abs(result["p_value"] - expected)
    median = statistics.median(times)
    floor = statistics.median(timings["floor"])
    print(f"compare, {args.cases:,} paired cases, {only_a + only_b:,} discordant ({only_a:,} vs {only_b:,}):")
    print(f"  wall time median of {args.repeat}: {median:.2f} s (runs: {', '.join(f'{t:.2f}' for t in times)}); goal < 2 s")
    print(f"  floor (bare json.loads of both files): {floor:.2f} s; ratio {median / floor:.2f}x")
    cpu_c, cpu_f = statistics.median(cpu["compare"]), statistics.median(cpu["floor"])
    print(f"  CPU time: compare {cpu_c:.2f} s, floor {cpu_f:.2f} s (ratio {cpu_c / cpu_f:.2f}x); load average {os.getloadavg()[0]:.1f}")
    print(f"  McNemar p = {result['p_value']:.6e}, scipy binomtest = {expected:.6e}, |difference| = {error:.1e}; goal <= 1e-12")
    ok = median < 2.0 and error <= 1e-12 and result["only_a"] == only_a and result["only_b"] == only_b
    print("  OK" if ok else "  GOAL MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
