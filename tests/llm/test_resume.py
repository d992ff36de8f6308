"""A run killed with SIGKILL and started again asks only what it had not been answered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_evals.llm.cache import ResponseCache
from pytest_evals.testing.fake_openai import FakeOpenAI

from .helpers import answered_prompts, endpoint_args, probe_suite

CASES = 160
CONCURRENCY = 8


def cached_answers(cache_dir: Path) -> int:
    cache = ResponseCache(cache_dir, run_id="inspect")
    try:
        return cache.answers("probe")
    finally:
        cache.close()


@pytest.mark.slow
def test_resume_after_sigkill(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path
) -> None:
    server.configure(latency=0.1)
    prompts = [f"resume case {i}" for i in range(CASES)]
    probe_suite(pytester, prompts)
    cache_dir = tmp_path / "cache"
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        *endpoint_args(server, cache_dir, "--evals-concurrency", str(CONCURRENCY)),
    ]
    proc = subprocess.Popen(
        args, cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while server.stats()["answered"] < CASES // 3:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    while server.stats()["in_flight"]:  # requests of the dead run still being answered
        time.sleep(0.02)
    first_run = answered_prompts(server)
    stored = cached_answers(cache_dir)
    assert 0 < stored < CASES
    # At most the requests in flight at the kill were answered but never stored.
    assert sum(first_run.values()) - stored <= CONCURRENCY

    server.reset()
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        *endpoint_args(server, cache_dir, "--evals-concurrency", str(CONCURRENCY))
    )
    result.assert_outcomes(passed=CASES)
    second_run = answered_prompts(server)
    # Only the missing answers were asked, each once, and the dead run's claims did not
    # make anybody wait for their expiry.
    assert sum(second_run.values()) == CASES - stored
    assert set(second_run.values()) == {1}
    assert time.monotonic() - started < 60
    assert cached_answers(cache_dir) == CASES
