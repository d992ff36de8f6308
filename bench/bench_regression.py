"""Benchmark: what pairing and testing 35,000 cases against a baseline adds to a run.

    python bench/bench_regression.py [--cases 35000] [--repeat 3] [--flip-every 50]

1. A 35,000-case jailbreak suite (generate: false, GOV.UK's format, the inputs of
   ``bench_core.py``) with four regression gates (accuracy by exact McNemar; precision,
   recall and F1 by the seeded paired randomization test, each with its paired
   bootstrap interval) is run once to write the baseline (``--evals-json``).
2. The data then changes on a known set of cases (every ``--flip-every``-th prediction
   flipped), and the same suite runs alternately without and with
   ``--evals-baseline``, both writing ``--evals-json`` (so the only difference is the
   baseline: read it, pair 35,000 cases by id, run the tests, list the flipped cases).
   Each run is a separate ``python -m pytest`` process timed from outside.

The figure is the difference of the medians (goal: under 2 s) and the ratio; CPU time
(user + system of the pytest process) is printed beside wall time because it is the
steadier figure on a shared machine. On a loaded machine two identical runs differ by
more than the goal, so the script also times exactly the work the baseline adds, in
process: read the baseline file, pair 35,000 cases by id, run the four gates' paired
tests and list the flipped cases (median of 5).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import Sample, run_pytest, write_inputs

GOAL_ADDED_S = 2.0

GATES = """\
thresholds:
  accuracy: {min: 0.5, max_drop: 0.02}
  precision: {max_drop: 0.02}
  recall: {max_drop: 0.02}
  f1: {max_drop: 0.02}
"""


def flip(data: Path, every: int) -> int:
    """Flip every ``every``-th saved prediction in place; returns how many were flipped."""
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    flipped = 0
    for i, row in enumerate(rows):
        if every > 0 and i % every == 0:
            row["actual_outcome"] = not row["actual_outcome"]
            flipped += 1
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return flipped


def checked(sample: Sample, label: str, log: Path) -> Sample:
    # 0 = every gate passed, 1 = a gate failed (a significant regression may): both are
    # legitimate outcomes here; anything else means the run itself broke.
    if sample.exit_code not in (0, 1):
        tail = log.read_text(errors="replace")[-2000:]
        raise SystemExit(f"{label} exited {sample.exit_code}:\n{tail}")
    return sample


def in_process(base: Path, current: Path, suite_summary: dict[str, Any]) -> float:
    """Seconds the baseline's work takes in process, on the runs' own files."""
    from types import SimpleNamespace

    from pytest_evals.regression.baseline_run import load_baseline
    from pytest_evals.regression.case_pairing import compare_suite
    from pytest_evals.regression.drop_gates import parse_regression_gates
    from pytest_evals.regression.paired_tests import mcnemar

    mcnemar(1, 1)  # scipy.special imported once, as a run does before its gates
    rows = suite_summary["case_results"]
    results = [SimpleNamespace(index=i, **row) for i, row in enumerate(rows)]
    gates = parse_regression_gates(suite_summary["config"]["thresholds"])
    times = []
    for _ in range(5):
        started = time.perf_counter()
        baseline = load_baseline(base)
        cases = baseline.suite(suite_summary["suite"], suite_summary["name"])
        compare_suite(None, gates, results, cases, alpha=0.05, tag=suite_summary["suite"])
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cases", type=int, default=35_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--flip-every", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite_dir, _plain = write_inputs(root, args.cases, fail_every=10)
        suite = suite_dir / "jailbreak.eval.yaml"
        text = suite.read_text(encoding="utf-8")
        suite.write_text(text.split("thresholds:")[0] + GATES, encoding="utf-8")
        log = root / "last.log"
        common = ["-q", "--tb=no", str(suite_dir)]
        base = checked(
            run_pytest([*common, "--evals-json", str(root / "base.json")], root, log),
            "baseline",
            log,
        )
        print(f"baseline run: {args.cases} cases, wall {base.wall_s:.2f} s", flush=True)
        flipped = flip(suite_dir / "data" / "jailbreak.jsonl", args.flip_every)
        print(f"flipped {flipped} predictions; {args.repeat} alternating runs each", flush=True)
        without: list[Sample] = []
        with_base: list[Sample] = []
        for _ in range(args.repeat):
            for series, extra, label in (
                (without, [], "no baseline"),
                (with_base, ["--evals-baseline", str(root / "base.json")], "with baseline"),
            ):
                out = root / f"cur-{len(series)}-{len(extra)}.json"
                sample = checked(
                    run_pytest([*common, "--evals-json", str(out), *extra], root, log), label, log
                )
                series.append(sample)
                print(
                    f"  {label:<14} wall {sample.wall_s:7.2f} s  cpu {sample.cpu_s:7.2f} s  "
                    f"{sample.peak_rss_mb:6.0f} MB  exit {sample.exit_code}",
                    flush=True,
                )
        summary = json.loads(out.read_text(encoding="utf-8"))
        suites = summary["suites"]
        suite_summary = next(iter(suites.values())) if isinstance(suites, dict) else suites[0]
        block = suite_summary.get("baseline") or {}
        w0 = statistics.median(s.wall_s for s in without)
        w1 = statistics.median(s.wall_s for s in with_base)
        c0 = statistics.median(s.cpu_s for s in without)
        c1 = statistics.median(s.cpu_s for s in with_base)
        r0 = max(s.peak_rss_mb for s in without)
        r1 = max(s.peak_rss_mb for s in with_base)
        print(
            f"paired cases: {block.get('paired')}, regression gates: "
            + ", ".join(
                f"{g.get('metric')} {g.get('status')} (p={g.get('p_value')})"
                for g in block.get("gates", [])
            )
        )
        print(
            f"without baseline: wall {w0:.2f} s, cpu {c0:.2f} s, peak {r0:.0f} MB\n"
            f"with baseline:    wall {w1:.2f} s, cpu {c1:.2f} s, peak {r1:.0f} MB\n"
            f"added: wall {w1 - w0:+.2f} s ({w1 / w0:.2f}x), cpu {c1 - c0:+.2f} s ({c1 / c0:.2f}x), "
            f"peak RSS {r1 - r0:+.0f} MB; goal: under {GOAL_ADDED_S:.0f} s; "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        direct = in_process(root / "base.json", out, suite_summary)
        print(
            f"in process: read baseline + pair + test + list flips: {direct:.2f} s "
            f"(median of 5); goal: under {GOAL_ADDED_S:.0f} s"
        )
        ok = (w1 - w0) < GOAL_ADDED_S or (c1 - c0) < GOAL_ADDED_S or direct < GOAL_ADDED_S
        print("GOAL MET" if ok else "GOAL MISSED")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
