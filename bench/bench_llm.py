"""Benchmark of the LLM layer against a bare aiohttp client, on a loopback server.

2,000 HaluEval-style judge requests, 64 in flight, a server (subprocess) answering after
100 ms. The baseline is the physical limit of this machine: a minimal aiohttp client
posting the same bodies with a plain semaphore. Figures are ratios against it, measured
in the same run:

    python bench/bench_llm.py                     # client (both transports), cached rerun
    python bench/bench_llm.py --pytest            # + whole pytest runs (plain and -n 2)
    python bench/bench_llm.py --pytest-only       # the whole pytest runs alone
    python bench/bench_llm.py --transport-pair    # process vs aiohttp, paired whole runs

Goals: the client reaches at least 0.85x the baseline's throughput (single process).
Whole ``python -m pytest`` processes of a HaluEval QA suite with the same requests,
timed from outside, each ratio against a baseline measured in the same round:

(a) cold run / the raw client, server at 100 ms                         <= 1.8x
(b) fully cached rerun (0 requests) / 2,000 trivial parametrized pytest
    tests with as many failing, same ``-q --tb=no``, pytest_evals not
    loaded (``-p no:evals``; the run with it loaded is shown too)       <= 1.2x
(c) at ``--slow-latency`` (500 ms): the run's throughput / the raw client's >= 0.85x

(d) ``--transport-pair``: the same cold whole run (100 ms) with ``--evals-transport
    process`` and with ``--evals-transport aiohttp``, paired in alternating rounds
    (the order flips every round): process / aiohttp wall time, min/median/max. The
    helper process earns its place as the default only if every round is below 0.95x.

Rounds alternate the variants (a noisy machine hits them alike); medians are reported.
Run it in an environment without unrelated pytest plugins: each one's import is part
of every pytest process timed here (and of its trivial baseline).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_evals.llm import Judge, LLMClient, LLMSettings
from pytest_evals.llm.secret import Secret
from pytest_evals.testing.fake_openai import spawn_fake_openai

PROMPT = (
    "I want you to act as an answer judge. Given a question and an answer, your objective is to "
    "determine if the provided answer contains non-factual or hallucinated information.\n\n"
    "#Question#: {question}\n#Answer#: {answer}\n#Your Judgement#: "
)


#: Client CPU seconds per request, by variant (the server runs in another process).
CPU: dict[str, list[float]] = {"raw": [], "process": [], "aiohttp": [], "openai": []}


def judge_prompts(n: int) -> list[str]:
    return [
        PROMPT.format(
            question=f"Which city hosted event number {i} of the series, and in which year?",
            answer=f"It was held in city {i % 97} in {1900 + i % 120}, according to the records.",
        )
        for i in range(n)
    ]


async def raw_client(base_url: str, prompts: list[str], concurrency: int, model: str) -> float:
    import aiohttp

    sem = asyncio.Semaphore(concurrency)
    url = base_url + "/chat/completions"
    headers = {"Authorization": "Bearer sk-bench", "Content-Type": "application/json"}
    async with aiohttp.ClientSession(
        headers=headers, connector=aiohttp.TCPConnector(limit=0)
    ) as session:

        async def one(prompt: str) -> str:
            body = {
                "model": model,
                "messages": [{"role": "user", "content": prompt}],
                "temperature": 0,
            }
            async with sem, session.post(url, data=json.dumps(body).encode()) as resp:
                data = json.loads(await resp.read())
                return str(data["choices"][0]["message"]["content"])

        start, cpu = time.perf_counter(), time.process_time()
        replies = await asyncio.gather(*(one(p) for p in prompts))
        elapsed = time.perf_counter() - start
        CPU["raw"].append((time.process_time() - cpu) / len(prompts))
    assert all(r == "Yes" for r in replies)
    return elapsed


async def layer(settings: LLMSettings, prompts: list[str]) -> tuple[float, LLMClient]:
    client = LLMClient(settings)
    judge = Judge(client)
    # Warm up the transport (SDK import, connection pool) outside the timed part.
    await client.chat("warm-up", namespace="bench-warmup")
    start, cpu = time.perf_counter(), time.process_time()
    verdicts = await asyncio.gather(*(judge.verdict(p, namespace="bench") for p in prompts))
    elapsed = time.perf_counter() - start
    CPU[settings.transport].append((time.process_time() - cpu) / len(prompts))
    assert all(v is True for v, _ in verdicts)
    await client.aclose()
    client.close()
    return elapsed, client


def run_layer(
    base_url: str, prompts: list[str], concurrency: int, transport: str, cache_dir: Path
) -> tuple[float, float]:
    """(first run, fully cached rerun) seconds of the LLM layer on a fresh cache."""
    settings = LLMSettings(
        configured_base_url=base_url,
        api_key=Secret("sk-bench"),
        concurrency=concurrency,
        cache_dir=cache_dir,
        transport=transport,  # type: ignore[arg-type]
    )
    elapsed, client = asyncio.run(layer(settings, prompts))
    assert client.stats.requests == len(prompts) + 1, client.stats
    cached, again = asyncio.run(layer(settings, prompts))
    assert again.stats.requests == 0 and again.stats.cache_hits == len(prompts) + 1
    return elapsed, cached


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("-n", "--requests", type=int, default=2000)
    ap.add_argument("-c", "--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--transports", default="process,aiohttp,openai")
    ap.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds; medians are reported"
    )
    ap.add_argument("--pytest", action="store_true", help="also time whole pytest runs")
    ap.add_argument("--pytest-only", action="store_true", help="only the whole pytest runs")
    ap.add_argument(
        "--slow-latency",
        type=float,
        default=0.5,
        help="server latency of ratio (c), in seconds (0 skips it; default 0.5)",
    )
    ap.add_argument("--no-xdist", action="store_true", help="skip the -n 2 runs (information only)")
    ap.add_argument(
        "--transport-pair",
        action="store_true",
        help="only (d): paired whole runs, --evals-transport process vs aiohttp",
    )
    args = ap.parse_args(argv)
    if args.transport_pair:
        return bench_transport_pair(args)
    if args.pytest_only:
        return bench_pytest(args)
    prompts = judge_prompts(args.requests)
    transports = args.transports.split(",")
    ideal = args.requests / args.concurrency * args.latency
    print(
        f"{args.requests} judge requests, {args.concurrency} in flight, server latency "
        f"{args.latency * 1000:.0f} ms (ideal {ideal:.2f} s), {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    raw: list[float] = []
    first: dict[str, list[float]] = {t: [] for t in transports}
    cached: dict[str, list[float]] = {t: [] for t in transports}
    ratios: dict[str, list[float]] = {t: [] for t in transports}
    with spawn_fake_openai(latency=args.latency, responder="yes") as server:
        for _ in range(args.rounds):
            # Interleaved, so a change in machine load hits every variant alike.
            raw.append(
                asyncio.run(raw_client(server.base_url, prompts, args.concurrency, "gpt-4o-mini"))
            )
            for transport in transports:
                with tempfile.TemporaryDirectory() as cache_dir:
                    a, b = run_layer(
                        server.base_url, prompts, args.concurrency, transport, Path(cache_dir)
                    )
                first[transport].append(a)
                cached[transport].append(b)
                ratios[transport].append(raw[-1] / a)
        base = statistics.median(raw)
        print(
            f"  raw aiohttp baseline            {base:6.2f} s  {args.requests / base:7.1f} req/s  1.00x"
            f"  (client CPU {statistics.median(CPU['raw']) * 1e3:.2f} ms/request)"
        )
        for transport in transports:
            t = statistics.median(first[transport])
            print(
                f"  LLM layer, transport {transport:8s}  {t:6.2f} s  {args.requests / t:7.1f} req/s  "
                f"{statistics.median(ratios[transport]):.2f}x  (per round: "
                + ", ".join(f"{r:.2f}" for r in ratios[transport])
                + f"; client CPU {statistics.median(CPU[transport][::2]) * 1e3:.2f} ms/request)"
            )
        for transport in transports:
            c = statistics.median(cached[transport])
            print(
                f"  fully cached rerun ({transport:7s})   {c:6.2f} s  {args.requests / c:7.1f} req/s  {base / c:.1f}x"
            )
    if args.pytest:
        return bench_pytest(args)
    return 0


HALUEVAL_SUITE = """task: halueval
data_dir: {data_dir}
tasks: [qa]
sample: {n}
"""

TRIVIAL_TESTS = """import pytest


@pytest.mark.parametrize("i", range({n}))
def test_trivial(i):
    assert i >= {failing}
"""


def _pytest_process(cwd: Path, *args: str) -> tuple[float, str]:
    """(wall seconds, last line) of one whole ``python -m pytest`` process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=no", *args]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    out = proc.stdout.strip()
    last = out.splitlines()[-1] if out else proc.stderr[-300:]
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"pytest {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:] or out[-2000:]}")
    return elapsed, last


def _failed_count(line: str) -> int:
    words = line.replace(",", " ").split()
    return int(words[words.index("failed") - 1]) if "failed" in words else 0


def _halueval_data() -> Path | None:
    data_dir = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "halueval"
    if not (data_dir / "qa_data.json").exists():
        print(f"  (skipping pytest runs: no HaluEval data at {data_dir})")
        return None
    return data_dir


def bench_transport_pair(args: argparse.Namespace) -> int:
    """(d): cold whole runs, ``--evals-transport process`` / ``aiohttp``, paired in rounds."""
    data_dir = _halueval_data()
    if data_dir is None:
        return 0
    n, c = args.requests, args.concurrency
    print(
        f"paired whole pytest processes: {n} HaluEval QA cases, cold cache, server at "
        f"{args.latency * 1000:.0f} ms, {c} in flight, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}, {args.rounds} rounds (the order flips every round)"
    )
    variants = ("process", "aiohttp")
    times: dict[str, list[float]] = {v: [] for v in variants}
    ratios: list[float] = []
    with tempfile.TemporaryDirectory() as work, spawn_fake_openai(latency=args.latency, responder="yes") as server:
        root = Path(work)
        (root / "halueval.eval.yaml").write_text(HALUEVAL_SUITE.format(data_dir=data_dir, n=n))
        outcome: dict[str, str] = {}
        for r in range(args.rounds):
            for variant in variants if r % 2 == 0 else variants[::-1]:
                summary = root / f"summary-{variant}-{r}.json"
                run_args = ["halueval.eval.yaml", "--evals-base-url", server.base_url]
                run_args += ["--evals-cache-dir", str(root / f"cache-{variant}-{r}"), "--evals-concurrency", str(c)]
                run_args += ["--evals-transport", variant, f"--evals-json={summary}"]
                elapsed, last = _pytest_process(root, *run_args)
                llm = json.loads(summary.read_text())["llm"]
                # Both variants did the same work, and each used the transport it names.
                assert llm["requests"] == n, (variant, llm["requests"])
                assert (llm["helper_processes"] > 0) == (variant == "process"), (variant, llm)
                assert outcome.setdefault("last", _outcome(last)) == _outcome(last), (outcome, last)
                times[variant].append(elapsed)
            ratios.append(times["process"][-1] / times["aiohttp"][-1])
            print(
                f"  round {r + 1}: process {times['process'][-1]:6.2f} s  aiohttp {times['aiohttp'][-1]:6.2f} s"
                f"  ratio {ratios[-1]:.3f}x"
            )
    med = statistics.median
    for variant in variants:
        print(f"    --evals-transport {variant:8s} {med(times[variant]):6.2f} s  (min {min(times[variant]):.2f})")
    print(
        f"  (d) whole run, process / aiohttp transport: median {med(ratios):.3f}x  "
        f"(min {min(ratios):.3f}, max {max(ratios):.3f}; below 0.95x in every round: "
        f"{'yes' if max(ratios) < 0.95 else 'no'})"
    )
    return 0


def _outcome(line: str) -> str:
    """The counts of pytest's last line, without its time."""
    return line.split(" in ")[0]


def bench_pytest(args: argparse.Namespace) -> int:
    """Whole pytest runs of a HaluEval QA suite against their baselines, in rounds."""
    data_dir = _halueval_data()
    if data_dir is None:
        return 0
    n, c = args.requests, args.concurrency
    prompts = judge_prompts(n)
    latencies = [args.latency] + ([args.slow_latency] if args.slow_latency > 0 else [])
    print(
        f"whole pytest processes: {n} HaluEval QA cases, {c} in flight, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}, {args.rounds} alternating rounds (medians)"
    )
    ratio_a: list[float] = []
    ratio_b: list[float] = []
    ratio_c: list[float] = []
    #: 2,000 trivial tests / the raw client: the least (a) can be on this machine now,
    #: since pytest's per-item cost scales with CPU speed and the client's time does not.
    floor: list[float] = []
    times: dict[str, list[float]] = {}

    def note(label: str, seconds: float) -> None:
        times.setdefault(label, []).append(seconds)

    with tempfile.TemporaryDirectory() as work, contextlib.ExitStack() as stack:
        root = Path(work)
        (root / "halueval.eval.yaml").write_text(HALUEVAL_SUITE.format(data_dir=data_dir, n=n))
        servers = {lat: stack.enter_context(spawn_fake_openai(latency=lat, responder="yes")) for lat in latencies}
        trivial = root / "trivial"
        trivial.mkdir()
        for r in range(args.rounds):
            for lat in latencies:
                url = servers[lat].base_url
                raw = asyncio.run(raw_client(url, prompts, c, "gpt-4o-mini"))
                cache = root / f"cache-{lat}-{r}"
                run_args = ["halueval.eval.yaml", "--evals-base-url", url, "--evals-cache-dir", str(cache)]
                run_args += ["--evals-concurrency", str(c)]
                cold, last = _pytest_process(root, *run_args)
                raw_after = asyncio.run(raw_client(url, prompts, c, "gpt-4o-mini"))
                raw = min(raw, raw_after)  # the client's best of the two around the run
                note(f"raw client @ {lat * 1000:.0f} ms", raw)
                note(f"pytest cold run @ {lat * 1000:.0f} ms", cold)
                if r == 0:
                    print(f"    cold run @ {lat * 1000:.0f} ms: {last}")
                if lat == args.latency:
                    ratio_a.append(cold / raw)
                    failing = _failed_count(last)
                    (trivial / "test_trivial.py").write_text(TRIVIAL_TESTS.format(n=n, failing=failing))
                    # Alternate the cached rerun and its baseline.
                    cached, last_cached = _pytest_process(root, *run_args)
                    # The baseline is pytest alone (our plugin not loaded): what the
                    # suite's cases cost beyond plain tests, start-up included.
                    base, last_base = _pytest_process(trivial, "-p", "no:evals")
                    with_plugin, _ = _pytest_process(trivial)
                    note("pytest cached rerun", cached)
                    note(f"{n} trivial tests, {failing} failing", base)
                    note("  the same with pytest_evals loaded", with_plugin)
                    if r == 0:
                        print(f"    cached rerun: {last_cached}\n    trivial tests: {last_base}")
                    ratio_b.append(cached / base)
                    floor.append(base / raw)
                else:
                    ratio_c.append(raw / cold)
            print(
                f"  round {r + 1}: (a) {ratio_a[-1]:.2f}x  (b) {ratio_b[-1]:.2f}x"
                + (f"  (c) {ratio_c[-1]:.2f}x" if ratio_c else "")
                + f"  (trivial tests / raw client {floor[-1]:.2f}x)"
            )
        for label, values in times.items():
            print(f"    {label:38s} {statistics.median(values):6.2f} s  (min {min(values):.2f})")
        med = statistics.median
        print(f"  (a) whole pytest run / raw aiohttp client @ {args.latency * 1000:.0f} ms: {med(ratio_a):.2f}x  (goal <= 1.8x)")
        print(
            f"      pytest alone, {n} trivial tests / raw client: {med(floor):.2f}x  "
            "(what pytest's own per-item cost is worth on this machine now)"
        )
        print(f"  (b) cached rerun / {n} trivial tests, as many failing: {med(ratio_b):.2f}x  (goal <= 1.2x)")
        if ratio_c:
            print(
                f"  (c) throughput @ {args.slow_latency * 1000:.0f} ms, whole run / raw client: {med(ratio_c):.2f}x"
                "  (goal >= 0.85x)"
            )
        if not args.no_xdist:
            url = servers[args.latency].base_url
            for label, cache in (("pytest -n 2", "x"), ("pytest -n 2, cached rerun", "x")):
                run_args = ["halueval.eval.yaml", "--evals-base-url", url, "--evals-cache-dir", str(root / cache)]
                elapsed, last = _pytest_process(root, *run_args, "--evals-concurrency", str(c), "-n", "2")
                print(f"    {label:38s} {elapsed:6.2f} s  ({last})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
