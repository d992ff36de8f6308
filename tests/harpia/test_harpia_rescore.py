"""``pytest-evals rescore`` on a clean HarpIA run: timings are not results (exit 0)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


def rescore(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_evals.cli.main", "rescore", str(folder), *args], capture_output=True, text=True
    )


def test_clean_harpia_run_rescores_equal(pytester: pytest.Pytester, write_harpia: Callable[..., Path]) -> None:
    write_harpia([{"id": "bleu"}, {"id": "chrf"}, {"id": "exact_match"}], name="tr")
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-report-dir", "runs")
    assert result.ret == 0, result.stdout.str()[-2000:]
    (folder,) = [p for p in (pytester.path / "runs").iterdir() if p.is_dir()]
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert "elapsed_time" in json.dumps(summary["suites"][0]["tables"])  # timings are stored
    proc = rescore(folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "recomputed aggregates equal summary.json" in proc.stdout
    # A field only the live run knows is not a difference; a changed score still is.
    suite = summary["suites"][0]
    suite["cases"]["expected"] = suite["cases"]["total"]
    (folder / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    assert rescore(folder).returncode == 0
    first = next(iter(suite["metrics"].values()))
    leaf = first if "value" in first else next(iter(first.values()))
    leaf["value"] = -1.0
    (folder / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    proc = rescore(folder)
    assert proc.returncode == 1 and "metrics differ" in proc.stdout
