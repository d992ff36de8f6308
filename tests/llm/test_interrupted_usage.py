"""Usage totals of an interrupted ``-n 2`` run include what the workers were answered."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_evals.testing.fake_openai import FakeOpenAI

from .helpers import probe_suite


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_xdist_run_reports_the_workers_usage(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path, sig: signal.Signals
) -> None:
    server.configure(latency=0.2, served_models="smol")
    probe_suite(pytester, [f"p{i}" for i in range(200)])
    out = tmp_path / "summary.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "pytest", "-p", "no:randomly", "-n", "2", "-p", "no:cacheprovider",
            "--evals-base-url", server.base_url, "--evals-cache-dir", str(tmp_path / "c"),
            "--evals-concurrency", "2", "--evals-json", str(out),
        ],
        cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while server.stats()["answered"] < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(proc.pid, sig)  # Ctrl-C (or a CI job's stop) reaches everyone
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    answered = server.stats()["answered"]
    assert 20 <= answered < 200
    llm = json.loads(out.read_text())["llm"]
    # Each worker has at most 2 requests on the wire when it takes its totals, and may
    # send a few more before its engine stops: those are the only ones missing (before
    # the controller read the interrupted workers' totals, all of them were: 0 of ~50).
    assert answered - 8 <= llm["requests"] <= answered, (llm["requests"], answered, output[-3000:])
