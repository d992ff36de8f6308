"""Benchmark of the LLM layer against a bare aiohttp client, on a loopback server.

2,000 HaluEval-style judge requests, 64 in flight, a server (subprocess) answering after
100 ms. The baseline is the physical limit of this machine: a minimal aiohttp client
posting the same bodies with a plain semaphore. Figures are ratios against it, measured
in the same run:

    python bench/bench_llm.py                     # client (both transports), cached rerun
    python bench/bench_llm.py --pytest            # + whole pytest runs (plain and -n 2)
    python bench/bench_llm.py --pytest-only --rounds 3   # the whole pytest runs alone
    python bench/bench_llm.py --pytest-only --quick      # 500 cases, one round
    python bench/bench_llm.py --transport-pair    # lean vs aiohttp, paired whole runs
    python bench/bench_llm.py --transport-pair process,aiohttp   # any two transports

Goals: the client reaches at least 0.85x the baseline's throughput (single process).
Whole ``python -m pytest`` processes of a HaluEval QA suite with the same requests
(``--pytest-only``), timed from outside, each ratio against a baseline measured in the
same round (issue 31's limits):

(a) cold run / the raw client, server at 100 ms                         <= 1.3x
(n) cold ``-n 2`` run / cold plain run, idle and with a CPU-bound
    process pinned to one core (``taskset -c 0``)                       <= 1.0x
    (a run of endpoint-judged suites alone stays in one process under
    ``-n``, docs/scale.md; the output says which way the run went)
(b) fully cached rerun (0 requests) / 2,000 trivial parametrized pytest
    tests with as many failing, same ``-q --tb=no``, pytest_evals not
    loaded (the run with it loaded is shown too)                         <= 1.1x
(c) at ``--slow-latency`` (500 ms): the run's throughput / the raw client's >= 0.9x

``--rounds 3`` gives medians of three alternating rounds; ``--quick`` is 500 cases in
one round. The timed processes load only the project's own plugins (``--plugins
lean``: autoloading off, xdist, pytest-html and pytest_evals by ``-p``), as a venv
with only the project's extras would; ``--plugins all`` loads every installed one.
Every variant must reach the same pass/fail counts.

(d) ``--transport-pair A,B`` (default ``lean,aiohttp``): the same cold whole run (100 ms)
    with ``--evals-transport A`` and with ``--evals-transport B``, paired in alternating
    rounds (the order flips every round): A / B wall time, min/median/max. The helper
    process (``process``) was to become the default only if every round was below 0.95x
    against aiohttp (it was not); ``lean`` became ``auto``'s choice for ``http://`` with
    every round below 1.0x (docs/llm.md).

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
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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
CPU: dict[str, list[float]] = {"raw": [], "lean": [], "process": [], "aiohttp": [], "openai": []}


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
    ap.add_argument("--transports", default="lean,process,aiohttp,openai")
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
    ap.add_argument("--no-xdist", action="store_true", help="skip the -n 2 runs")
    ap.add_argument(
        "--plugins",
        choices=("lean", "all"),
        default="lean",
        help="pytest plugins of the timed processes: lean (the project's own; default) or all installed",
    )
    ap.add_argument(
        "--quick", action="store_true", help="a quick look: 500 cases, 1 round (unless given)"
    )
    ap.add_argument(
        "--transport-pair",
        nargs="?",
        const="lean,aiohttp",
        metavar="A,B",
        help="only (d): paired whole runs, --evals-transport A vs B (default lean,aiohttp)",
    )
    args = ap.parse_args(argv)
    if args.quick:
        given = argv if argv is not None else sys.argv[1:]
        if not any(a in ("-n", "--requests") or a.startswith("--requests=") for a in given):
            args.requests = 500
        if not any(a == "--rounds" or a.startswith("--rounds=") for a in given):
            args.rounds = 1
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


#: The stdout of the last timed pytest process.
LAST_OUTPUT: list[str] = [""]


def _pytest_process(cwd: Path, *args: str) -> tuple[float, str]:
    """(wall seconds, last line) of one whole ``python -m pytest`` process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=no", *args]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    out = proc.stdout.strip()
    LAST_OUTPUT[:] = [out]
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
    """(d): cold whole runs, ``--evals-transport A`` / ``B``, paired in rounds."""
    data_dir = _halueval_data()
    if data_dir is None:
        return 0
    n, c = args.requests, args.concurrency
    print(
        f"paired whole pytest processes: {n} HaluEval QA cases, cold cache, server at "
        f"{args.latency * 1000:.0f} ms, {c} in flight, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}, {args.rounds} rounds (the order flips every round)"
    )
    first, _, second = str(args.transport_pair).partition(",")
    variants = (first.strip(), second.strip())
    if not all(variants) or variants[0] == variants[1]:
        raise SystemExit(f"--transport-pair {args.transport_pair!r}: name two transports, e.g. lean,aiohttp")
    times: dict[str, list[float]] = {v: [] for v in variants}
    ratios: list[float] = []
    plugins = _plugin_args(args.plugins)
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
                elapsed, last = _pytest_process(root, *plugins.evals, *run_args)
                llm = json.loads(summary.read_text())["llm"]
                # Both variants did the same work, and each used the transport it names.
                assert llm["requests"] == n, (variant, llm["requests"])
                assert (llm["helper_processes"] > 0) == (variant == "process"), (variant, llm)
                assert outcome.setdefault("last", _outcome(last)) == _outcome(last), (outcome, last)
                times[variant].append(elapsed)
            a, b = variants
            ratios.append(times[a][-1] / times[b][-1])
            print(f"  round {r + 1}: {a} {times[a][-1]:6.2f} s  {b} {times[b][-1]:6.2f} s  ratio {ratios[-1]:.3f}x")
    med = statistics.median
    for variant in variants:
        print(f"    --evals-transport {variant:8s} {med(times[variant]):6.2f} s  (min {min(times[variant]):.2f})")
    print(
        f"  (d) whole run, {variants[0]} / {variants[1]} transport: median {med(ratios):.3f}x  "
        f"(min {min(ratios):.3f}, max {max(ratios):.3f}; below 1.0x in every round: "
        f"{'yes' if max(ratios) < 1.0 else 'no'}, below 0.95x: {'yes' if max(ratios) < 0.95 else 'no'})"
    )
    return 0


def _outcome(line: str) -> str:
    """The counts of pytest's last line, without its time."""
    return line.split(" in ")[0]


def _competitor() -> subprocess.Popen[bytes]:
    """A CPU-bound process pinned to one core (``taskset -c 0`` where available): what a
    busy CI runner or a second job on the machine looks like to the run."""
    cmd = [sys.executable, "-c", "while 1: pass"]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    return subprocess.Popen(cmd)


@contextlib.contextmanager
def _competing() -> Iterator[None]:
    proc = _competitor()
    try:
        time.sleep(0.2)
        yield
    finally:
        proc.kill()
        proc.wait()


def bench_pytest(args: argparse.Namespace) -> int:
    """Whole pytest runs of a HaluEval QA suite against their baselines, in rounds.

    Per round (the order of paired variants flips every round): the raw client around
    a cold plain run and a cold ``-n 2`` run (fresh caches), the same pair with a
    CPU-bound competitor pinned to one core, the cached rerun against trivial tests,
    and the 500 ms throughput pair.
    """
    data_dir = _halueval_data()
    if data_dir is None:
        return 0
    n, c = args.requests, args.concurrency
    prompts = judge_prompts(n)
    latencies = [args.latency] + ([args.slow_latency] if args.slow_latency > 0 else [])
    print(
        f"whole pytest processes: {n} HaluEval QA cases, {c} in flight, {os.cpu_count()} CPUs, "
        f"{args.rounds} alternating rounds (medians), plugins: {args.plugins}"
    )
    print(f"  command: python bench/bench_llm.py --pytest-only -n {n} --rounds {args.rounds}" + (" --no-xdist" if args.no_xdist else ""))
    ratios: dict[str, list[float]] = {}
    times: dict[str, list[float]] = {}
    loads: list[float] = []

    def note(label: str, seconds: float) -> None:
        times.setdefault(label, []).append(seconds)

    def ratio(label: str, value: float) -> None:
        ratios.setdefault(label, []).append(value)

    outcome: dict[str, str] = {}

    def same_outcome(label: str, last: str) -> None:
        # Every variant reaches the same verdicts: a faster wrong answer is no gain.
        seen = outcome.setdefault("cold", _outcome(last))
        if _outcome(last) != seen:
            raise RuntimeError(f"{label}: {last!r} differs from {seen!r}")

    with tempfile.TemporaryDirectory() as work, contextlib.ExitStack() as stack:
        root = Path(work)
        (root / "halueval.eval.yaml").write_text(HALUEVAL_SUITE.format(data_dir=data_dir, n=n))
        servers = {lat: stack.enter_context(spawn_fake_openai(latency=lat, responder="yes")) for lat in latencies}
        trivial = root / "trivial"
        trivial.mkdir()
        plugins = _plugin_args(args.plugins)
        fresh = iter(range(1_000_000))

        def cold_run(url: str, *extra: str) -> tuple[float, str]:
            cache = root / f"cache-{next(fresh)}"
            run_args = ["halueval.eval.yaml", "--evals-base-url", url, "--evals-cache-dir", str(cache)]
            return _pytest_process(root, *plugins.evals, *run_args, "--evals-concurrency", str(c), *extra)

        for r in range(args.rounds):
            loads.append(os.getloadavg()[0])
            url = servers[args.latency].base_url
            raw = asyncio.run(raw_client(url, prompts, c, "gpt-4o-mini"))
            pair = ("plain", "-n 2") if r % 2 == 0 else ("-n 2", "plain")
            got: dict[str, float] = {}
            for variant in pair:
                if variant == "-n 2" and args.no_xdist:
                    continue
                got[variant], last = cold_run(url, *(["-n", "2"] if variant == "-n 2" else []))
                same_outcome(variant, last)
                if r == 0 and variant == "plain":
                    print(f"    cold run @ {args.latency * 1000:.0f} ms: {last}")
                if r == 0 and variant == "-n 2":
                    # The plugin's default for suites judged by the endpoint alone
                    # (controller/io_bound_run.py): say which way this -n 2 run went.
                    one = "-n 2 not used" in LAST_OUTPUT[0]
                    print(f"    cold -n 2 run: {'one process (the plugin did not start workers)' if one else 'two xdist workers'}")
            raw = min(raw, asyncio.run(raw_client(url, prompts, c, "gpt-4o-mini")))
            note(f"raw client @ {args.latency * 1000:.0f} ms", raw)
            note(f"pytest cold run @ {args.latency * 1000:.0f} ms", got["plain"])
            ratio("a", got["plain"] / raw)
            if not args.no_xdist:
                note("pytest -n 2 cold run", got["-n 2"])
                ratio("n_idle", got["-n 2"] / got["plain"])
                with _competing():
                    busy: dict[str, float] = {}
                    for variant in pair:
                        busy[variant], last = cold_run(url, *(["-n", "2"] if variant == "-n 2" else []))
                        same_outcome(f"{variant} (competitor)", last)
                note("pytest cold run, competitor", busy["plain"])
                note("pytest -n 2 cold run, competitor", busy["-n 2"])
                ratio("n_busy", busy["-n 2"] / busy["plain"])
            # The cached rerun against its baseline: pytest alone (our plugin not
            # loaded), what the suite's cases cost beyond plain tests, start-up included.
            failing = _failed_count(outcome["cold"])
            (trivial / "test_trivial.py").write_text(TRIVIAL_TESTS.format(n=n, failing=failing))
            warm = root / "cache-warm"
            if r == 0:
                cold_run_args = ["halueval.eval.yaml", "--evals-base-url", url, "--evals-cache-dir", str(warm)]
                _pytest_process(root, *plugins.evals, *cold_run_args, "--evals-concurrency", str(c))
            run_args = ["halueval.eval.yaml", "--evals-base-url", url, "--evals-cache-dir", str(warm)]
            cached, last_cached = _pytest_process(root, *plugins.evals, *run_args, "--evals-concurrency", str(c))
            same_outcome("cached rerun", last_cached)
            base, last_base = _pytest_process(trivial, *plugins.bare)
            with_plugin, _ = _pytest_process(trivial, *plugins.evals)
            note("pytest cached rerun", cached)
            note(f"{n} trivial tests, {failing} failing", base)
            note("  the same with pytest_evals loaded", with_plugin)
            if r == 0:
                print(f"    cached rerun: {last_cached}\n    trivial tests: {last_base}")
            ratio("b", cached / base)
            ratio("floor", base / raw)
            if args.slow_latency > 0:
                slow_url = servers[args.slow_latency].base_url
                slow_raw = asyncio.run(raw_client(slow_url, prompts, c, "gpt-4o-mini"))
                slow, last = cold_run(slow_url)
                same_outcome("500 ms run", last)
                note(f"raw client @ {args.slow_latency * 1000:.0f} ms", slow_raw)
                note(f"pytest cold run @ {args.slow_latency * 1000:.0f} ms", slow)
                ratio("c", slow_raw / slow)
            print(
                f"  round {r + 1} (load {loads[-1]:.1f}): "
                + "  ".join(f"{k} {v[-1]:.2f}x" for k, v in ratios.items())
            )
        loads.append(os.getloadavg()[0])
        for label, values in times.items():
            print(f"    {label:38s} {statistics.median(values):6.2f} s  (min {min(values):.2f})")
    med = statistics.median
    lat = f"{args.latency * 1000:.0f} ms"
    print(f"  load average (1 min) at the start of each round and at the end: {', '.join(f'{x:.1f}' for x in loads)}")
    print(f"  (a) whole pytest run / raw aiohttp client @ {lat}: {med(ratios['a']):.2f}x  (goal <= 1.3x)")
    print(
        f"      pytest alone, {n} trivial tests / raw client: {med(ratios['floor']):.2f}x  "
        "(what pytest's own per-item cost is worth on this machine now)"
    )
    if "n_idle" in ratios:
        print(f"  (n) -n 2 / plain cold run @ {lat}: {med(ratios['n_idle']):.2f}x  (goal <= 1.0x)")
        print(
            f"      with a CPU-bound process on one core: {med(ratios['n_busy']):.2f}x  (goal <= 1.0x; "
            "rounds " + ", ".join(f"{x:.2f}" for x in ratios["n_busy"]) + ")"
        )
    print(f"  (b) cached rerun / {n} trivial tests, as many failing: {med(ratios['b']):.2f}x  (goal <= 1.1x)")
    if "c" in ratios:
        print(
            f"  (c) throughput @ {args.slow_latency * 1000:.0f} ms, whole run / raw client: {med(ratios['c']):.2f}x"
            "  (goal >= 0.9x)"
        )
    return 0


class _Plugins:
    def __init__(self, bare: list[str], evals: list[str]) -> None:
        self.bare, self.evals = bare, evals


def _plugin_args(mode: str) -> _Plugins:
    """``lean``: plugin autoloading off, only the plugins of the project and its
    dependencies loaded (xdist; pytest-html and pytest-metadata of the ``reports``
    extra when installed), as in a venv with only the project's extras. ``all``: every
    plugin installed in this environment (dev plugins' imports are then part of every
    process timed, baselines included)."""
    if mode == "all":
        os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
        return _Plugins(["-p", "no:evals"], [])
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    bare = ["-p", "xdist.plugin"]
    for module in ("pytest_metadata.plugin", "pytest_html.plugin"):
        with contextlib.suppress(ImportError):
            __import__(module)
            bare += ["-p", module]
    return _Plugins(bare, [*bare, "-p", "pytest_evals.plugin"])


if __name__ == "__main__":
    sys.exit(main())
