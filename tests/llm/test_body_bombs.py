"""A compression bomb is capped where it is decoded, on every transport.

The endpoint sends about 1 MB of gzip (or deflate) that decodes to 1 GiB. The cap on
the response body (``evals_max_response_bytes``, 16 MiB by default) applies to the
decoded body: the request fails at once, without retry, with a clear error, and the
process's memory stays far below the bomb's size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_evals.llm.settings import DEFAULT_MAX_BODY_BYTES

from .bomb_server import DECODED, BombServer
from .helpers import probe_suite

REPO = Path(__file__).resolve().parents[2]
TOO_LARGE = f"response body larger than {DEFAULT_MAX_BODY_BYTES} bytes (evals_max_response_bytes)"

# Runs in a fresh interpreter, so its peak RSS is the request's and nothing else's.
MEASURE = """
import json, resource, sys
from pytest_evals.llm import LLMClient, LLMError, LLMSettings

base_url, transport, prompt = sys.argv[1:4]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
client = LLMClient(LLMSettings(
    configured_base_url=base_url, cache=False, transport=transport, max_retries=2, timeout=60,
))
client.chat_sync("warm up the imports and the pool")
warm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    client.chat_sync(prompt)
    outcome = "answered"
except LLMError as exc:
    outcome = str(exc)
client.close()
print(json.dumps({
    "outcome": outcome,
    "warm_kb": warm,
    "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "helper_peak_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
}))
"""


@pytest.fixture(scope="module")
def bomb_server() -> BombServer:
    with BombServer() as server:
        yield server  # type: ignore[misc]


@pytest.mark.parametrize(
    ("transport", "prompt"),
    [("aiohttp", "BOMB"), ("lean", "BOMB"), ("lean", "BOMB-DEFLATE"), ("openai", "BOMB"), ("openai", "BOMB-DEFLATE"), ("process", "BOMB")],
    ids=["aiohttp-gzip", "lean-gzip", "lean-deflate", "openai-gzip", "openai-deflate", "process-gzip"],
)
def test_a_compression_bomb_is_capped_when_decoded(
    bomb_server: BombServer, transport: str, prompt: str
) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("OPENAI_API_KEY", None)
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, bomb_server.base_url, transport, prompt],
        capture_output=True, text=True, timeout=300, env=env, cwd=REPO, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    # One attempt although two retries were allowed: a body over the cap is not retried.
    assert "failed after 1 attempt" in found["outcome"], found["outcome"]
    assert TOO_LARGE in found["outcome"]
    mib = 2**10  # ru_maxrss is in KiB
    growth = (found["peak_kb"] - found["warm_kb"]) / mib
    # Reading 1 GiB would add over 1,000 MiB (it added 2 GiB before the cap): the cap
    # and a few decode buffers are all that may be held.
    assert growth < 200, f"peak RSS grew by {growth:.0f} MiB reading a {DECODED >> 20} MiB bomb"
    assert found["helper_peak_kb"] / mib < 300  # the process transport's helper too


@pytest.mark.parametrize("transport", ["aiohttp", "lean", "openai"])
def test_a_bomb_is_one_case_error_and_the_others_run(
    pytester: pytest.Pytester, bomb_server: BombServer, tmp_path: Path, transport: str
) -> None:
    probe_suite(pytester, ["first question", "BOMB here", "third question"])
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--evals-base-url", bomb_server.base_url,
        "--evals-cache-dir", str(tmp_path / "cache"), "--evals-transport", transport,
        "--evals-json", "summary.json",
    )
    result.assert_outcomes(passed=2, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*ERROR at setup of probe::c1 (probe.jsonl:2)*",
        f"[[]infrastructure error[]] LLM request to * failed after 1 attempt: {TOO_LARGE}*",
    ])
    summary = json.loads((pytester.path / "summary.json").read_text(encoding="utf-8"))
    assert summary["llm"]["errors"] == 1
