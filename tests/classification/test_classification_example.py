"""The support-bot example under eval_suites/: short, offline, passing, neutral."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sklearn.metrics import accuracy_score, f1_score, recall_score

from .test_classification_outputs import FORBIDDEN

EXAMPLES = Path(__file__).resolve().parents[2] / "eval_suites"
SUITE = EXAMPLES / "support_escalation.eval.yaml"
DATA = EXAMPLES / "data" / "support" / "escalation.jsonl"


def test_example_is_at_most_15_lines() -> None:
    assert len(SUITE.read_text(encoding="utf-8").splitlines()) <= 15


def test_example_suite_passes_offline_with_scikit_learns_figures(pytester: pytest.Pytester) -> None:
    shutil.copy(SUITE, pytester.path / SUITE.name)
    (pytester.path / "data" / "support").mkdir(parents=True)
    shutil.copy(DATA, pytester.path / "data" / "support" / DATA.name)
    result = pytester.runpytest("--evals-json", "s.json", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 40
    y_true, y_pred = [r["expected"] for r in rows], [r["actual"] for r in rows]
    (suite,) = json.loads((pytester.path / "s.json").read_text())["suites"]
    m = suite["metrics"]
    assert suite["passed"] is True and all(g["passed"] for g in suite["gates"]) and len(suite["gates"]) == 3
    assert m["accuracy"]["value"] == pytest.approx(accuracy_score(y_true, y_pred))
    assert m["recall"]["value"] == pytest.approx(recall_score(y_true, y_pred, labels=["escalate"], average="macro"))
    assert m["macro_f1"]["value"] == pytest.approx(f1_score(y_true, y_pred, average="macro"))
    # Misses exist, so the gates are what pass the run, and the words are the data's own.
    assert suite["cases"]["failed"] > 0
    assert not FORBIDDEN.findall(result.stdout.str())
