"""A rag suite's run folder is read back by ``pytest-evals rescore`` (its config.json included)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import write_suite
from .samples import CASE


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(tmp_path / "llm-cache"))


def test_a_rag_run_folder_rescores(pytester: pytest.Pytester) -> None:
    # every rag metric's dumped config carries ``lower_is_better_`` (unset here)
    metrics = [{"name": "relevance", "threshold": 0.5}, {"name": "faithfulness", "threshold": 0.5}]
    write_suite(pytester, [CASE], metrics=metrics)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-report-dir", "runs")
    assert result.ret == 0, result.stdout.str()
    [folder] = list((pytester.path / "runs").iterdir())
    done = subprocess.run([sys.executable, "-m", "pytest_evals.cli.main", "rescore", str(folder)],
                          capture_output=True, text=True, cwd=pytester.path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Extra inputs" not in done.stdout + done.stderr
