"""--evals-batch against a server without a Batch API (llama.cpp, vLLM, Ollama): one
line that says so, with the server's status; nothing recorded, nothing sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_evals.llm.batch import ledger
from pytest_evals.testing.fake_openai import FakeOpenAI

from .helpers import endpoint_args, probe_suite


@pytest.mark.parametrize("workers", [None, "2"])
def test_batch_mode_without_a_batch_api_is_one_line_and_leaves_nothing(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path, workers: str | None
) -> None:
    server.configure(batch_api=False)
    probe_suite(pytester, [f"q{i}" for i in range(12)])
    cache = tmp_path / "c"
    extra = ["-n", workers] if workers else []
    result = pytester.runpytest(*endpoint_args(server, cache, "--evals-batch"), *extra)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    line = (
        f"evals batch: {server.base_url} has no Batch API (GET {server.base_url}/batches: "
        "HTTP 404: Not Found); run without --evals-batch"
    )
    assert line in text, text[-3000:]
    # Asked once, before any worker started: one line (pytest repeats an exit's reason
    # on stderr), never one per case.
    assert result.stdout.str().count("has no Batch API") == 1
    assert "q11" not in text and "HTTP 404" not in text.replace(line, "")
    assert ledger.load_jobs(cache) == []
    stats = server.stats()
    assert stats["received"] == 0  # not a single completion asked
    assert stats["probes"]["no_batch_api"] == 1


@pytest.mark.parametrize("workers", [None, "2"])
def test_a_suites_own_batch_true_without_a_batch_api_is_the_same_one_line(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path, workers: str | None
) -> None:
    """``batch: true`` in the suite (no --evals-batch): the refusal can only come once
    cases are collected (in the workers under -n 2), and is still the same one line and
    exit code, never an INTERNALERROR, with no completion asked and no job recorded."""
    server.configure(batch_api=False)
    probe_suite(pytester, [f"q{i}" for i in range(12)], batch=True)
    cache = tmp_path / "c"
    extra = ["-n", workers] if workers else []
    result = pytester.runpytest(*endpoint_args(server, cache), *extra)
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text, text[-3000:]
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text[-3000:]
    line = (
        f"evals batch: {server.base_url} has no Batch API (GET {server.base_url}/batches: "
        "HTTP 404: Not Found); run without --evals-batch (and without suites' batch: true)"
    )
    assert line in text, text[-3000:]
    assert result.stdout.str().count("has no Batch API") == 1
    assert "q11" not in text
    result.assert_outcomes()  # no case ran, none passed
    assert ledger.load_jobs(cache) == []
    assert server.stats()["received"] == 0
