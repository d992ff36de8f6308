"""HaluEval through batch mode, end to end against the loopback files/batches server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import expected_confusion, reported_confusion, run, write_suite


def test_batch_run_asks_nothing_interactively_and_scores_what_the_judge_said(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Any]
) -> None:
    server, judge = judge_server
    server.configure(batch_failure_rate=0.03, batch_delay=0.2)
    write_suite(pytester, data_dir, sample=400)
    result, summary = run(pytester, server, "batch", "--evals-batch")
    stats = server.stats()
    assert stats["received"] == 0  # not one interactive chat request
    assert stats["batch_lines_failed"] > 0  # the failure rate did bite...
    assert stats["batches_created"] == 2  # ...and the failed lines went in a second batch
    assert stats["batch_lines"] == 400 + stats["batch_lines_failed"]
    assert len(judge.log) == 400
    assert reported_confusion(summary) == expected_confusion(judge.log)
    suite = summary["suites"][0]
    assert suite["cases"]["total"] == 400 and suite["cases"]["errors"] == 0
    batch = summary["batch"]
    assert (batch["rounds"], batch["batches"], batch["completed"]) == (2, 2, 400)
    assert batch["failed_lines"] == stats["batch_lines_failed"]
    assert batch["prompt_tokens"] > 0 and batch["given_up"] == 0
    result.stdout.fnmatch_lines(["*evals batch: 2 rounds, 2 batch(es), 400/4* lines completed*"])

    # The cache now holds every answer: an ordinary run asks nothing and agrees.
    server.reset()
    _, again = run(pytester, server, "again")
    stats = server.stats()
    assert stats["received"] == 0 and stats["batches_created"] == 0
    assert again["suites"][0]["metrics"] == suite["metrics"]
    assert "batch" not in again
