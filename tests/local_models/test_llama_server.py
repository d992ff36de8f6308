"""A HaluEval suite judged by a real small model behind llama.cpp's server.

llama-cpp-python's server works on one request at a time and queues the rest, so the
run below, at 64 requests in flight, is the case where a client that sends its whole
window at once loses cases to timeouts spent waiting in the server's queue.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import LlamaServer

REPO = Path(__file__).resolve().parents[2]
DATA_DIR = REPO.parent / "shared" / "data" / "halueval"

SUITE = f"""\
task: halueval
data_dir: {DATA_DIR}
tasks: [qa]
sample: 20
seed: 3
thresholds:
  unparseable_rate: {{max: 1.0}}
"""


def run_suite(
    pytester: pytest.Pytester, server: LlamaServer, name: str, *args: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / f"{name}.json"
    result = pytester.runpytest_subprocess(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "-p", "no:randomly",
        "--evals-base-url", server.base_url, "--evals-model", "smollm2-135m",
        "--evals-cache-dir", str(pytester.path / "cache"), "--evals-json", str(out),
        # A one-word verdict: a small model left without a cap can run to its context.
        "--evals-max-tokens", "8",
        *args,
    )
    return result, json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.usefixtures("local_env")
def test_halueval_on_a_one_slot_server_at_64_in_flight_then_from_the_cache(
    pytester: pytest.Pytester, llama_server: LlamaServer
) -> None:
    pytester.makefile(".eval.yaml", halueval=SUITE)
    _, first = run_suite(pytester, llama_server, "first", "--evals-concurrency", "64")
    suite = first["suites"][0]
    assert suite["cases"]["total"] == 20
    # No case lost to the server's queue: whatever erred is the model's own reply (cut at
    # the 8-token cap before a Yes/No: judge_truncated), never an infrastructure error.
    kinds = suite["cases"].get("errors_by_kind", {})
    assert set(kinds) <= {"judge_truncated"}, kinds
    assert sum(kinds.values()) == suite["cases"]["errors"]
    llm = first["llm"]
    assert llm["requests"] == 20, llm
    assert llm["prompt_tokens"] > 0 and llm["completion_tokens"] > 0

    # The same cases again: every answer from the cache, not one request.
    _, again = run_suite(pytester, llama_server, "again")
    assert again["llm"]["requests"] == 0
    assert again["suites"][0]["metrics"] == suite["metrics"]

    # Two workers on the same cache: the same per-case verdicts, still no request.
    _, two = run_suite(pytester, llama_server, "two", "-n", "2")
    assert two["llm"]["requests"] == 0
    assert two["suites"][0]["metrics"] == suite["metrics"]
