"""Options, per-suite batch mode, the dry run at batch prices, bad input, and the CLI."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.cli.main import main
from pytest_evals.llm.batch import ledger
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import SUITE


def test_only_suites_with_batch_true_are_batched(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Any]
) -> None:
    server, _ = judge_server
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=data_dir, sample=12) + "batch: true\n")
    pytester.makefile(".eval.yaml", other=SUITE.format(data_dir=data_dir, sample=8).replace("seed: 11", "seed: 5") + "name: other\n")
    out = pytester.path / "s.json"
    result = pytester.runpytest(
        "halueval.eval.yaml", "other.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", server.base_url,
        "--evals-model", "judge-model", "--evals-cache-dir", str(pytester.path / "cache"), "--evals-json", str(out),
        "--evals-batch-poll", "0.02",
    )
    stats = server.stats()
    assert (stats["batches_created"], stats["batch_lines"]) == (1, 12)
    assert stats["received"] == 8  # the other suite asks interactively
    assert result.ret == 0
    summary = json.loads(out.read_text(encoding="utf-8"))
    assert [s["cases"]["errors"] for s in summary["suites"]] == [0, 0]


def test_dry_run_shows_batch_prices_and_sends_nothing(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Any]
) -> None:
    server, _ = judge_server
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=data_dir, sample=10))
    out = pytester.path / "dry.json"
    result = pytester.runpytest(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", server.base_url,
        "--evals-model", "gpt-4o-mini", "--evals-cache-dir", str(pytester.path / "cache"), "--evals-json", str(out),
        "--evals-batch", "--evals-dry-run",
    )
    stats = server.stats()
    assert (stats["received"], stats["batches_created"], stats["files_uploaded"]) == (0, 0, 0)
    result.stdout.fnmatch_lines(["*evals batch dry run: 10 uncached requests would go in 1 batch(es)*at batch prices*"])
    result.stdout.no_fnmatch_line("*evals batch: * rounds*")  # nothing was batched
    summary = json.loads(out.read_text(encoding="utf-8"))
    batch, llm = summary["batch"], summary["llm"]
    assert batch["dry_run_requests"] == llm["dry_run_requests"] == 10
    assert batch["dry_run_prompt_tokens"] == llm["dry_run_prompt_tokens"]
    assert batch["dry_run_cost_usd"] == pytest.approx(llm["dry_run_cost_usd"] / 2, rel=1e-3)
    # a batch price of its own for the model
    result = pytester.runpytest(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", server.base_url,
        "--evals-model", "gpt-4o-mini", "--evals-cache-dir", str(pytester.path / "cache"), "--evals-json", str(out),
        "--evals-batch", "--evals-dry-run", "--evals-batch-price", "gpt-4o-mini=0,0",
    )
    assert json.loads(out.read_text(encoding="utf-8"))["batch"]["dry_run_cost_usd"] == 0


def test_bad_options_name_what_is_wrong(pytester: pytest.Pytester) -> None:
    pytester.makefile(".eval.yaml", s="task: halueval\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-batch-price", "gpt-4o=cheap")
    result.stderr.fnmatch_lines(["*--evals-batch-price 'gpt-4o=cheap': expected MODEL=INPUT,OUTPUT*"])
    result = pytester.runpytest("-p", "no:cacheprovider", "-o", "evals_batch_retry=sometimes")
    result.stderr.fnmatch_lines(["*ini evals_batch_retry: expected 'batch' or 'live', got 'sometimes'*"])
    result = pytester.runpytest("-p", "no:cacheprovider", "-o", "evals_batch_max_lines=many")
    result.stderr.fnmatch_lines(["*ini evals_batch_max_lines: expected a number, got 'many'*"])
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-batch", "--no-evals-cache")
    result.stderr.fnmatch_lines(["*--evals-batch needs the response cache*"])


def _cli_process(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_evals.cli.main", "batch", *args], capture_output=True, text=True, timeout=120)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The same command in this process (``python -m`` is checked once, by the first status)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["batch", *args])
    return subprocess.CompletedProcess(["pytest-evals", "batch", *args], code, out.getvalue(), err.getvalue())


def test_cli_status_and_cancel(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Any]
) -> None:
    server, _judge = judge_server
    server.configure(batch_delay=600)
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=data_dir, sample=6))
    cache = pytester.path / "cache"
    out = pytester.path / "s.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-batch",
         "--evals-base-url", server.base_url, "--evals-model", "judge-model", "--evals-cache-dir", str(cache),
         "--evals-batch-poll", "0.05", "--evals-json", str(out)],
        cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    deadline = time.monotonic() + 60
    while not any(j.status == "submitted" for j in ledger.load_jobs(cache)):
        assert time.monotonic() < deadline and proc.poll() is None, "no batch submitted"
        time.sleep(0.05)
    (job,) = ledger.load_jobs(cache)
    status = _cli_process("status", "--cache-dir", str(cache))
    assert status.returncode == 0, status.stderr
    assert job.batch_id is not None and job.batch_id in status.stdout and "in_progress" in status.stdout and "0/6 completed" in status.stdout
    rows = json.loads(_cli("status", "--cache-dir", str(cache), "--json").stdout)
    assert rows[0]["batch_id"] == job.batch_id and rows[0]["lines"] == 6

    bad = _cli("cancel", "--cache-dir", str(cache), "batch-nope")
    assert bad.returncode == 1 and "not pending" in bad.stderr
    cancel = _cli("cancel", "--cache-dir", str(cache))
    assert cancel.returncode == 0 and f"{job.batch_id}: cancelling" in cancel.stdout
    output, _ = proc.communicate(timeout=120)
    # The run reports the cancelled batch and errors the cases it left unanswered.
    assert f"{job.batch_id} cancelled: 0 of 6 requests completed" in output
    summary = json.loads(out.read_text(encoding="utf-8"))
    assert summary["suites"][0]["cases"]["errors_by_kind"] == {"infrastructure": 6}
    assert server.stats()["received"] == 0
    status = _cli("status", "--cache-dir", str(cache), "--no-refresh")
    assert "cancelled" in status.stdout and "filled" in status.stdout
