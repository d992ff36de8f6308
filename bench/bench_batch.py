"""Benchmark: HaluEval (35,000 items by default) through batch mode, against a warm cache.

    python bench/bench_batch.py [--data-dir DIR] [--items N] [--batch-delay 5] [--keep]

1. ``pytest --evals-batch`` on a cold cache, against the loopback server (a subprocess
   whose Batch API answers every batch ``--batch-delay`` seconds after it is created):
   wall time and peak RSS of the whole run (gather + upload + submit + wait + fill +
   score), with the phase times the run prints, and the number of interactive requests
   (goal: 0).
2. The same suite again without ``--evals-batch`` on the now full cache (scored from
   the cache, no request): wall time and peak RSS.
3. The ratio batch run / warm run, and the batch run minus the server's fixed delay.

The server's judge says "Yes" to everything (the figures measure the plumbing, not
accuracy); ``--tb=no`` keeps pytest from printing 17,500 failure sections.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_halueval import DEFAULT_DATA, INI, SUITE, count_outcomes, run_measured

MODEL = "bench-judge"
PHASES = {
    "gather": re.compile(r"round \d+: .*\(gathered in ([\d.]+)s\)"),
    "upload + create": re.compile(r"submitted .* in ([\d.]+)s"),
    "fill": re.compile(r"filled the cache from .* in ([\d.]+)s"),
}


def phase_times(log: Path) -> dict[str, float]:
    text = log.read_text(encoding="utf-8", errors="replace")
    out = {name: sum(float(x) for x in pattern.findall(text)) for name, pattern in PHASES.items()}
    waited = re.search(r"evals batch: .* ([\d.]+)s waiting", text)
    out["waiting for the batch"] = float(waited.group(1)) if waited else float("nan")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--items", type=int, default=0, help="stratified sample size (0: all 35,000)")
    parser.add_argument("--batch-delay", type=float, default=5.0, help="seconds the server takes per batch")
    parser.add_argument("--poll", type=float, default=1.0, help="--evals-batch-poll")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)

    from pytest_evals.testing.fake_openai import spawn_fake_openai

    work = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    (work / "pytest.ini").write_text(INI, encoding="utf-8")
    sample = f"sample: {args.items}" if args.items else ""
    (work / "halueval.eval.yaml").write_text(
        SUITE.format(data_dir=Path(args.data_dir).resolve(), sample=sample, protocol=""), encoding="utf-8"
    )
    print(f"work folder: {work}")
    base = [
        sys.executable, "-m", "pytest", "halueval.eval.yaml", "-q", "--tb=no", "--evals-model", MODEL,
        "--evals-cache-dir", str(work / "cache"), "--evals-json", "summary.json",
    ]
    with spawn_fake_openai(responder="yes", batch_delay=args.batch_delay) as server:
        batch_cmd = [*base, "--evals-base-url", server.base_url, "--evals-batch", "--evals-batch-poll", str(args.poll)]
        start = time.time()
        cold, cold_rss, code = run_measured(batch_cmd, work, work / "batch.log")
        stats = server.stats()
        server.reset()
        warm, warm_rss, code_warm = run_measured([*base, "--evals-base-url", server.base_url], work, work / "warm.log")
        warm_stats = server.stats()
    summary = json.loads((work / "summary.json").read_text(encoding="utf-8"))
    n = summary["suites"][0]["cases"]["total"]
    phases = phase_times(work / "batch.log")
    print()
    print(f"{n:,} HaluEval items, server answers each batch after {args.batch_delay:g} s (poll every {args.poll:g} s)")
    print(f"1. pytest --evals-batch, cold cache   {cold:8.1f} s   peak RSS {cold_rss:.0f} MB   (exit {code})")
    for name, seconds in phases.items():
        print(f"     {name:<24} {seconds:8.1f} s")
    print(f"     scoring and the rest     {cold - sum(v for v in phases.values() if v == v):8.1f} s")
    print(f"   server: {stats['batches_created']} batch(es), {stats['batch_lines']:,} lines, "
          f"{stats['received']} interactive requests (goal 0)")
    print(f"2. pytest, warm cache (no batch)      {warm:8.1f} s   peak RSS {warm_rss:.0f} MB   (exit {code_warm}; "
          f"{warm_stats['received']} requests)")
    print(f"3. batch run / warm run               {cold / warm:8.2f}x   "
          f"(without the server's delay: {(cold - args.batch_delay) / warm:.2f}x)")
    print(f"   last lines: batch: {count_outcomes(work / 'batch.log')}")
    print(f"               warm:  {count_outcomes(work / 'warm.log')}")
    print(f"   (measured {time.strftime('%Y-%m-%d %H:%M', time.localtime(start))})")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
