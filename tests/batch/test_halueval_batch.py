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
    # ...and the failed lines went in later rounds, one batch each
    assert stats["batches_created"] == summary["batch"]["rounds"] >= 2
    assert stats["batch_lines"] == 400 + stats["batch_lines_failed"]
    assert len(judge.log) == 400
    assert reported_confusion(summary) == expected_confusion(judge.log)
    suite = summary["suites"][0]
    assert suite["cases"]["total"] == 400 and suite["cases"]["errors"] == 0
    batch = summary["batch"]
    rounds = batch["rounds"]
    assert (batch["batches"], batch["completed"]) == (rounds, 400)
    assert batch["failed_lines"] == stats["batch_lines_failed"]
    assert batch["prompt_tokens"] > 0 and batch["given_up"] == 0
    result.stdout.fnmatch_lines([f"*evals batch: {rounds} rounds, {rounds} batch(es), 400/{stats['batch_lines']} lines completed*"])

    # The cache now holds every answer: an ordinary run asks nothing and agrees.
    server.reset()
    _, again = run(pytester, server, "again")
    stats = server.stats()
    assert stats["received"] == 0 and stats["batches_created"] == 0
    assert again["suites"][0]["metrics"] == suite["metrics"]
    assert "batch" not in again


def test_two_workers_batch_once_and_report_the_same_numbers(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Any]
) -> None:
    server, judge = judge_server
    write_suite(pytester, data_dir, sample=60)
    _, plain = run(pytester, server, "plain", "--evals-batch", cache="cache-plain")
    plain_log = list(judge.log)
    assert server.stats()["batches_created"] == 1 and server.stats()["received"] == 0
    judge.log.clear()
    server.reset()
    result, two = run(pytester, server, "two", "--evals-batch", "-n", "2", cache="cache-two")
    stats = server.stats()
    # The first worker to take the lock batches the whole run; the other scores from the cache.
    assert (stats["batches_created"], stats["batch_lines"], stats["received"]) == (1, 60, 0)
    assert sorted(e["prompt"] for e in judge.log) == sorted(e["prompt"] for e in plain_log)
    assert two["suites"][0]["metrics"] == plain["suites"][0]["metrics"]
    assert reported_confusion(two) == expected_confusion(judge.log)
    assert (two["batch"]["rounds"], two["batch"]["batches"], two["batch"]["completed"]) == (1, 1, 60)
    result.assert_outcomes(passed=sum(e["truth"] == e["meaning"] for e in judge.log),
                           failed=sum(e["truth"] != e["meaning"] for e in judge.log))


def test_requests_over_the_line_limit_are_split_into_several_batches(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Any]
) -> None:
    server, judge = judge_server
    server.configure(batch_max_lines=25)  # the server refuses bigger batches, as OpenAI does
    write_suite(pytester, data_dir, sample=60)
    _, summary = run(pytester, server, "split", "--evals-batch", "-o", "evals_batch_max_lines=25")
    stats = server.stats()
    assert (stats["batches_created"], stats["batch_lines"], stats["received"]) == (3, 60, 0)
    assert summary["batch"]["rounds"] == 1 and summary["batch"]["batches"] == 3
    assert reported_confusion(summary) == expected_confusion(judge.log)


def test_lines_that_keep_failing_become_infrastructure_errors(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Any]
) -> None:
    server, _ = judge_server
    server.configure(batch_failure_rate=1.0)
    write_suite(pytester, data_dir, sample=12)
    result, summary = run(pytester, server, "fail", "--evals-batch", "-o", "evals_batch_attempts=2")
    stats = server.stats()
    assert (stats["batches_created"], stats["batch_lines_failed"], stats["received"]) == (2, 24, 0)
    suite = summary["suites"][0]
    assert suite["cases"]["errors"] == 12 and suite["cases"]["errors_by_kind"] == {"infrastructure": 12}
    assert summary["batch"]["given_up"] == 12
    result.assert_outcomes(errors=12)
    result.stdout.fnmatch_lines(["*batch mode: batch line failed (HTTP 500)*tried in 2 batches*"])


def test_live_retry_asks_only_the_failed_lines_interactively(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Any]
) -> None:
    server, judge = judge_server
    server.configure(batch_failure_rate=0.1)
    write_suite(pytester, data_dir, sample=100)
    _, summary = run(pytester, server, "live", "--evals-batch", "--evals-batch-retry", "live")
    stats = server.stats()
    assert stats["batches_created"] == 1 and stats["batch_lines_failed"] > 0
    assert stats["received"] == stats["batch_lines_failed"]  # each failed line asked once, live
    assert summary["batch"]["retried_live"] == stats["batch_lines_failed"]
    assert summary["suites"][0]["cases"]["errors"] == 0
    assert len(judge.log) == 100
    assert reported_confusion(summary) == expected_confusion(judge.log)


def test_expired_batch_is_reported_with_what_it_completed_and_the_rest_retried(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Any]
) -> None:
    server, judge = judge_server
    server.configure(batch_complete_fraction=0.5)
    write_suite(pytester, data_dir, sample=20)
    result, summary = run(pytester, server, "expired", "--evals-batch")
    result.stdout.fnmatch_lines(["*evals batch: batch-fake-* expired: 10 of 20 requests completed*"])
    # 20 -> 10 answered; 10 -> 5; 5 -> 2; the last 3 lines failed three batches and are given up
    batch = summary["batch"]
    assert (batch["rounds"], batch["completed"], batch["given_up"]) == (3, 17, 3)
    assert summary["suites"][0]["cases"]["errors_by_kind"] == {"infrastructure": 3}
    assert server.stats()["received"] == 0
    assert len(judge.log) == 17
