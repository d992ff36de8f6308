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

        start = time.perf_counter()
        replies = await asyncio.gather(*(one(p) for p in prompts))
        elapsed = time.perf_counter() - start
    assert all(r == "Yes" for r in replies)
    return elapsed


async def layer(settings: LLMSettings, prompts: list[str]) -> tuple[float, LLMClient]:
    client = LLMClient(settings)
    judge = Judge(client)
    # Warm up the transport (SDK import, connection pool) outside the timed part.
    await client.chat("warm-up", namespace="bench-warmup")
    start = time.perf_counter()
    verdicts = await asyncio.gather(*(judge.verdict(p, namespace="bench") for p in prompts))
    elapsed = time.perf_counter() - start
    assert all(v is True for v, _ in verdicts)
    await client.aclose()
    client.close()
    return elapsed, client


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("-n", "--requests", type=int, default=2000)
    ap.add_argument("-c", "--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--transports", default="openai,aiohttp")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each variant; the best is kept")
    ap.add_argument("--pytest", action="store_true", help="also time whole pytest runs")
    args = ap.parse_args(argv)
    prompts = judge_prompts(args.requests)
    floor = args.requests / args.concurrency * args.latency
    print(
        f"{args.requests} judge requests, {args.concurrency} in flight, server latency {args.latency * 1000:.0f} ms "
        f"(ideal {floor:.2f} s), {os.cpu_count()} CPUs"
    )
    with spawn_fake_openai(latency=args.latency, responder="yes") as server:
        base = min(
            asyncio.run(raw_client(server.base_url, prompts, args.concurrency, "gpt-4o-mini"))
            for _ in range(args.repeat)
        )
        print(
            f"  raw aiohttp baseline          {base:6.2f} s  {args.requests / base:7.1f} req/s  1.00x"
        )
        for transport in args.transports.split(","):
            best = float("inf")
            for _ in range(args.repeat):
                with tempfile.TemporaryDirectory() as cache_dir:
                    settings = LLMSettings(
                        configured_base_url=server.base_url,
                        api_key=Secret("sk-bench"),
                        concurrency=args.concurrency,
                        cache_dir=Path(cache_dir),
                        transport=transport,  # type: ignore[arg-type]
                    )
                    elapsed, client = asyncio.run(layer(settings, prompts))
                    assert client.stats.requests == args.requests + 1, client.stats
                    best = min(best, elapsed)
                    if transport == args.transports.split(",")[0] and _ == 0:
                        cached, cclient = asyncio.run(layer(settings, prompts))
                        assert (
                            cclient.stats.requests == 0
                            and cclient.stats.cache_hits == args.requests + 1
                        )
                        cached_line = (
                            f"  fully cached rerun ({transport:7s}) {cached:6.2f} s  "
                            f"{args.requests / cached:7.1f} req/s  {base / cached:.2f}x"
                        )
            print(
                f"  LLM layer, transport {transport:8s} {best:6.2f} s  {args.requests / best:7.1f} req/s  "
                f"{base / best:.2f}x"
            )
        print(cached_line)
        if args.pytest:
            bench_pytest(server.base_url, args, base)
    return 0


def bench_pytest(base_url: str, args: argparse.Namespace, base: float) -> None:
    raise SystemExit("--pytest needs the core collection (not wired yet)")


if __name__ == "__main__":
    sys.exit(main())
