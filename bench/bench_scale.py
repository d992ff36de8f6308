"""Peak memory and time of big runs with half the cases failing (issue 30, attack 12).

For each size, a jailbreak_guardrails suite of N saved cases, every second one
misclassified, runs as its own ``python -m pytest`` process writing the JSON summary
and a run folder (what a CI job keeps). Printed per size: wall and CPU time, the
process's peak RSS (``os.wait4``'s resource usage of that child), RSS per case, and how
many failure blocks the terminal printed. The last lines give the marginal memory per
case (the slope between sizes), the figure that says whether memory grows linearly.

Prints figures; it is not a test and asserts nothing but the runs' own sanity.

    python bench/bench_scale.py                          # 20,000, 50,000, 100,000 cases
    python bench/bench_scale.py --cases 2000 5000        # quick
    python bench/bench_scale.py --xdist                  # the same under -n 2
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUITE = """\
task: jailbreak_guardrails
what: scale benchmark - {n} saved classifications, half of them wrong
input_path: data/cases.jsonl
thresholds:
  accuracy: {{min: 0.9}}
"""


def write_suite(root: Path, n: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    (root / "data").mkdir(parents=True)
    with (root / "data" / "cases.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            expected = rng.random() < 0.4
            actual = (not expected) if i % 2 else expected
            question = f"Question {i}: how do I renew a passport that expired {rng.randint(1, 20)} years ago?"
            fh.write(json.dumps({"id": f"c-{i:06d}", "question": question, "expected_outcome": expected,
                                 "actual_outcome": actual}) + "\n")
    (root / "scale.eval.yaml").write_text(SUITE.format(n=n), encoding="utf-8")


def run(root: Path, extra: list[str]) -> dict[str, float]:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--evals-json", "out/summary.json",
           "--evals-report-dir", "runs", *extra, "scale.eval.yaml"]
    log = root / "pytest.log"
    with log.open("wb") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=root, stdout=out, stderr=subprocess.STDOUT)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    text = log.read_text(encoding="utf-8", errors="replace")
    if code != 1:  # the gate fails: half the cases are wrong
        raise SystemExit(f"pytest exited {code}:\n{text[-3000:]}")
    summary = json.loads((root / "out" / "summary.json").read_text(encoding="utf-8"))
    failed = summary["suites"][0]["cases"]["failed"]
    blocks = len(re.findall(r"^_+ scale::c-\d+ ", text, flags=re.MULTILINE))
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,  # Linux: KiB
        "failed": failed,
        "blocks": blocks,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, nargs="+", default=[20_000, 50_000, 100_000])
    parser.add_argument("--xdist", action="store_true", help="run with -n 2")
    parser.add_argument("--workdir", help="keep the generated files here")
    args = parser.parse_args()
    extra = ["-n", "2"] if args.xdist else []
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
          f"{', -n 2 (peak RSS of the controller)' if args.xdist else ''}")
    print(f"{'cases':>8} {'failed':>8} {'wall s':>8} {'cpu s':>8} {'peak MB':>8} {'KB/case':>8} {'blocks':>7}")
    rows: list[tuple[int, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        base = Path(args.workdir) if args.workdir else Path(tmp)
        for n in args.cases:
            root = base / f"n{n}"
            write_suite(root, n)
            r = run(root, extra)
            rows.append((n, r))
            print(f"{n:>8,} {int(r['failed']):>8,} {r['wall_s']:>8.1f} {r['cpu_s']:>8.1f} {r['peak_mb']:>8.0f} "
                  f"{1024 * r['peak_mb'] / n:>8.1f} {int(r['blocks']):>7}", flush=True)
    for (n1, r1), (n2, r2) in itertools.pairwise(rows):
        slope_kb = 1024 * (r2["peak_mb"] - r1["peak_mb"]) / (n2 - n1)
        cpu_us = 1e6 * (r2["cpu_s"] - r1["cpu_s"]) / (n2 - n1)
        print(f"{n1:,} -> {n2:,} cases: {slope_kb:.1f} KB and {cpu_us:,.0f} us of CPU per extra case")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
