"""A command-line sample is a partial run; the suite file's own ``sample:`` is its definition.

HaluEval samples (``sample``/``seed``), so ``--evals-sample N`` applies to it: the run
measures N of the cases the suite file defines, and its verdict is PARTIAL (issue 25).
Plain and under ``-n 2``, on the 60 records the example suite ships.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "eval_suites" / "halueval.eval.yaml"
DATA_DIR = REPO.parent / "shared" / "data" / "halueval"
WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])


def copy_suite(pytester: pytest.Pytester, sample: int = 60) -> None:
    """The example suite, its data where ../shared puts it and its own ``sample``."""
    text = SUITE.read_text(encoding="utf-8").replace("../../shared/data/halueval", str(DATA_DIR))
    text = text.replace("sample: 60\n", f"sample: {sample}\n")
    (pytester.path / "eval_suites").mkdir(parents=True)
    (pytester.path / "eval_suites" / SUITE.name).write_text(text, encoding="utf-8")


def run(pytester: pytest.Pytester, workers: list[str], *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    result = pytester.runpytest_subprocess(
        "eval_suites", "-p", "no:cacheprovider", "--evals-json", "s.json", *workers, *args
    )
    summary = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))
    return result, summary["suites"][0]


@WORKERS
@pytest.mark.parametrize("option", [["--evals-sample", "20"], ["--evals-set", "halueval:sample=20"]], ids=["flag", "set"])
def test_a_command_line_sample_is_partial(pytester: pytest.Pytester, workers: list[str], option: list[str]) -> None:
    copy_suite(pytester)
    result, s = run(pytester, workers, *option)
    assert result.ret == 1
    c = s["cases"]
    assert (c["total"], c["population"], c["sampled_out"], c["deselected"]) == (20, 60, 40, 0)
    assert s["partial"] is True and s["passed"] is False
    assert "partial run: 20 of 60 cases run (sampled out 40); the gates cover only those cases" in s["reasons"][-1]
    allowed, s = run(pytester, workers, *option, "--evals-allow-partial")
    assert s["partial"] is True
    assert not any(r.startswith("partial run") for r in s["reasons"])
    assert allowed.ret == (0 if s["passed"] else 1)
    if s["passed"]:
        allowed.stdout.fnmatch_lines(["*halueval.eval.yaml: 20 cases, * -> PARTIAL"])


@WORKERS
def test_the_suite_files_own_sample_is_its_population(pytester: pytest.Pytester, workers: list[str]) -> None:
    copy_suite(pytester, sample=20)
    result, s = run(pytester, workers)
    assert s["cases"]["total"] == 20 and s["partial"] is False
    assert result.ret == (0 if s["passed"] else 1)
    assert "population" not in s["cases"] and not any(r.startswith("partial run") for r in s["reasons"])
    # A command-line sample no smaller than the file's defines the same cases: not partial.
    _result, s = run(pytester, workers, "--evals-sample", "20")
    assert s["cases"]["total"] == 20 and s["partial"] is False
