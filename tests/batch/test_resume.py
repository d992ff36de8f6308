"""A run killed while its batch is in progress: the next run re-attaches, pays nothing twice."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.llm.batch import ledger
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import expected_confusion, reported_confusion, run, write_suite


def _wait_for(condition: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_killed_run_reattaches_to_its_batch_instead_of_submitting_again(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Any]
) -> None:
    server, judge = judge_server
    server.configure(batch_delay=600)  # in progress until the test says otherwise
    write_suite(pytester, data_dir, sample=40)
    cache = pytester.path / "cache"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-batch",
         "--evals-base-url", server.base_url, "--evals-model", "judge-model", "--evals-cache-dir", str(cache),
         "--evals-batch-poll", "0.05"],
        cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(lambda: server.stats()["batches_created"] == 1, "the batch")
        _wait_for(lambda: any(j.status == "submitted" for j in ledger.load_jobs(cache)), "the ledger")
    finally:
        proc.kill()
        proc.wait(30)
    (job,) = ledger.load_jobs(cache)
    assert job.status == "submitted" and job.lines == 40 and job.batch_id
    assert not list((cache / "halueval").glob("*")) or len(judge.log) == 0  # nothing answered yet

    server.configure(batch_delay=0.3)
    result, summary = run(pytester, server, "resumed", "--evals-batch")
    stats = server.stats()
    assert (stats["batches_created"], stats["batch_lines"], stats["received"]) == (1, 40, 0)
    result.stdout.fnmatch_lines([f"*evals batch: re-attaching to {job.batch_id} of an earlier run (40 requests)*"])
    assert summary["batch"]["reattached"] == 1 and summary["batch"]["completed"] == 40
    assert summary["suites"][0]["cases"]["total"] == 40 and summary["suites"][0]["cases"]["errors"] == 0
    assert reported_confusion(summary) == expected_confusion(judge.log)
    (job,) = ledger.load_jobs(cache)
    assert (job.status, job.batch_status, job.completed) == ("filled", "completed", 40)


def test_job_killed_between_upload_and_create_is_found_by_its_input_file(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Any]
) -> None:
    """The create call went through but the run died before writing the batch id down."""
    server, _judge = judge_server
    write_suite(pytester, data_dir, sample=10)
    _, first = run(pytester, server, "first", "--evals-batch")
    cache = pytester.path / "cache"
    (job,) = ledger.load_jobs(cache)
    # Rewind the ledger to "submitting" and empty the cache: as if killed right after create.
    data = json.loads(job.path(cache).read_text())
    data.update(status="submitting", batch_id=None, batch_status=None)
    job.path(cache).write_text(json.dumps(data))
    for folder in cache.iterdir():
        if folder.name != ledger.FOLDER:
            subprocess.run(["rm", "-rf", str(folder)], check=True)
    before = server.stats()  # (not reset: the server must still know the batch)
    _, again = run(pytester, server, "again", "--evals-batch")
    stats = server.stats()
    assert stats["batches_created"] == before["batches_created"] == 1 and stats["received"] == 0
    assert again["batch"]["reattached"] == 1
    assert again["suites"][0]["metrics"] == first["suites"][0]["metrics"]


def test_a_recorded_batch_the_provider_does_not_know_stops_the_run_before_scoring(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Any]
) -> None:
    server, _ = judge_server
    write_suite(pytester, data_dir, sample=5)
    cache = pytester.path / "cache"
    job = ledger.Job.new(server.base_url, "earlier-run", 1, cache / "gone.jsonl", {"k" * 64: ["halueval"]}, 10)
    job.status, job.input_file_id, job.batch_id = "submitted", "file-gone", "batch-gone"
    job.save(cache)
    result = pytester.runpytest_subprocess(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", server.base_url, "--evals-batch",
        "--evals-model", "judge-model", "--evals-cache-dir", str(cache), "--evals-batch-poll", "0.01",
    )
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines([
        "*evals batch: batch API: retrieving batch-gone: NotFoundError*10 status checks in a row failed*",
        "*stopped before scoring so that no request is paid twice*",
    ])
    assert server.stats()["received"] == 0 and server.stats()["batches_created"] == 0
    (still,) = ledger.load_jobs(cache)
    assert still.status == "submitted"  # kept for the next run (or `pytest-evals batch status`)
