"""``pytest-evals rescore``: a ``--set`` that names no suite of the run is a warning."""

from __future__ import annotations

import subprocess
import sys

import pytest

SUITE = """
task: jailbreak_guardrails
input_path: cases.jsonl
thresholds: {accuracy: {min: 0.9}}
"""


def test_set_on_an_unknown_suite_warns(pytester: pytest.Pytester) -> None:
    pytester.makefile(".eval.yaml", jb=SUITE)
    (pytester.path / "cases.jsonl").write_text(
        '{"id": "a", "question": "q", "expected_outcome": true, "actual_outcome": true}\n'
        '{"id": "b", "question": "q", "expected_outcome": false, "actual_outcome": true}\n',
        encoding="utf-8",
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-report-dir", "runs")
    assert result.ret == 1
    (folder,) = [p for p in (pytester.path / "runs").iterdir() if p.is_dir()]
    clean = subprocess.run([sys.executable, "-m", "pytest_evals.cli.main", "rescore", str(folder)], capture_output=True, text=True)
    assert clean.returncode == 0 and clean.stderr == "", clean.stdout + clean.stderr
    typo = subprocess.run(
        [sys.executable, "-m", "pytest_evals.cli.main", "rescore", str(folder), "--set", "jbb:thresholds.accuracy.min=0.1"],
        capture_output=True, text=True,
    )
    assert "warning: --set names suite 'jbb', which is not in this run (suites: jb)" in typo.stderr
    assert "jb: 2 cases -> FAILED" in typo.stdout  # nothing changed
    fixed = subprocess.run(
        [sys.executable, "-m", "pytest_evals.cli.main", "rescore", str(folder), "--set", "jb:thresholds.accuracy.min=0.1"],
        capture_output=True, text=True,
    )
    assert fixed.returncode == 0 and fixed.stderr == "" and "jb: 2 cases -> PASSED" in fixed.stdout
