"""Benchmark of the LLM layer against a bare aiohttp client, on a loopback server.

2,000 HaluEval-style judge requests, 64 in flight, a server (subprocess) answering after
100 ms. The baseline is the physical limit of this machine: a minimal aiohttp client
posting the same bodies with a plain semaphore. Figures are ratios against it, measured
in the same run:

    python bench/bench_llm.py                     # client (both transports), cached rerun
    python bench/bench_llm.py --pytest            # + whole pytest runs (plain and -n 2)

Goal: the client reaches at least 0.85x the baseline's throughput (single process).
"""

from __future__ import annotations

import argparse
import asyncio
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
CPU: dict[str, list[float]] = {"raw": [], "aiohttp": [], "openai": []}


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
    ap.add_argument("--transports", default="aiohttp,openai")
    ap.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds; medians are reported"
    )
    ap.add_argument("--pytest", action="store_true", help="also time whole pytest runs")
    args = ap.parse_args(argv)
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
            bench_pytest(server.base_url, args, base)
    return 0


HALUEVAL_SUITE = """task: halueval
data_dir: {data_dir}
tasks: [qa]
sample: {n}
"""


def bench_pytest(base_url: str, args: argparse.Namespace, base: float) -> None:
    """Whole pytest runs of a HaluEval QA suite (``n`` judge calls), plain and ``-n 2``."""
    data_dir = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "halueval"
    if not (data_dir / "qa_data.json").exists():
        print(f"  (skipping pytest runs: no HaluEval data at {data_dir})")
        return
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        (root / "halueval.eval.yaml").write_text(
            HALUEVAL_SUITE.format(data_dir=data_dir, n=args.requests)
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}

        def run(cache: Path, *extra: str) -> float:
            cmd = [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-q",
                "--tb=no",
                "halueval.eval.yaml",
                "--evals-base-url",
                base_url,
                "--evals-cache-dir",
                str(cache),
                "--evals-concurrency",
                str(args.concurrency),
                *extra,
            ]
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
            elapsed = time.perf_counter() - start
            last = (
                proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-300:]
            )
            llm = [line for line in proc.stdout.splitlines() if line.startswith("evals llm:")]
            print(f"      {last}")
            if llm:
                print(f"      {llm[0]}")
            return elapsed

        print(
            f"  whole pytest runs ({args.requests} HaluEval QA cases, wall time including start-up):"
        )
        for label, cache, extra in (
            ("pytest, 1 process", root / "c1", ()),
            ("pytest, fully cached rerun", root / "c1", ()),
            ("pytest -n 2", root / "c2", ("-n", "2")),
            ("pytest -n 2, cached rerun", root / "c2", ("-n", "2")),
        ):
            elapsed = run(cache, *extra)
            print(f"    {label:28s} {elapsed:6.2f} s  (the raw client alone: {base:.2f} s)")


if __name__ == "__main__":
    sys.exit(main())
