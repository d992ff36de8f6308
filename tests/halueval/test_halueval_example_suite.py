"""The example suite ``eval_suites/halueval.eval.yaml``: the official files read from
``../shared/data/halueval`` (never a copy in the repository), a seeded stratified sample
of 60 records, offline, plainly and under ``-n 2``; the whole benchmark one override away.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "eval_suites" / "halueval.eval.yaml"


def test_the_repository_carries_no_copy_of_the_data() -> None:
    assert not list((REPO / "eval_suites").rglob("*_data.json"))
    assert "data_dir: ../../shared/data/halueval" in SUITE.read_text(encoding="utf-8")


def placed_suite(pytester: pytest.Pytester, data_dir: Path) -> None:
    """The suite as the repository has it, its data folder where ../shared puts it."""
    text = SUITE.read_text(encoding="utf-8").replace("../../shared/data/halueval", str(data_dir))
    (pytester.path / "eval_suites").mkdir()
    (pytester.path / "eval_suites" / SUITE.name).write_text(text, encoding="utf-8")


def test_example_suite_passes_offline_plain_and_xdist(pytester: pytest.Pytester, data_dir: Path) -> None:
    placed_suite(pytester, data_dir)
    summaries = {}
    for name, extra in (("plain", ()), ("xdist", ("-n", "2"))):
        result = pytester.runpytest_subprocess(
            "eval_suites/halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-json", f"{name}.json", *extra
        )
        assert result.ret == 0, result.stdout.str()[-3000:]
        suite = json.loads((pytester.path / f"{name}.json").read_text(encoding="utf-8"))["suites"][0]
        assert suite["passed"] and suite["cases"]["total"] == 60 and suite["cases"]["errors"] == 0
        assert not suite["partial"]
        # 60 x 10,000 / 34,507 = 17.39 (x3), 60 x 4,507 / 34,507 = 7.84: floors 58, two more
        assert {t: suite["metrics"][t]["n"]["value"] for t in ("qa", "dialogue", "summarization", "general")} == {
            "qa": 18, "dialogue": 17, "summarization": 17, "general": 8,
        }
        summaries[name] = suite
    assert summaries["plain"]["metrics"] == summaries["xdist"]["metrics"]


def test_full_benchmark_is_one_override_away(pytester: pytest.Pytester, data_dir: Path) -> None:
    placed_suite(pytester, data_dir)
    result = pytester.runpytest_subprocess(
        "eval_suites/halueval.eval.yaml", "--collect-only", "-q", "-p", "no:cacheprovider",
        "--evals-set", "halueval:sample=null",
    )
    result.stdout.fnmatch_lines(["34507 tests collected*"])
