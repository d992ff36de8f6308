"""xdist workers and the controller agree on the rootdir (issue 30, attack 5).

pytest takes a plugin option's value (``--evals-report-dir ../late``) for a path
argument when it decides the rootdir; a folder that appears after the controller
started but before its workers did moved the workers' rootdir to a common ancestor, and
the controller found no suite file ("suite file not found: .../proj/proj/s/j.eval.yaml")
and checked no gate.
"""

from __future__ import annotations

import json

import pytest

from pytest_evals.collection.xdist_rootdir import rootdir_addopts

CASES = (
    '{"id": "a", "question": "q", "expected_outcome": true, "actual_outcome": true}\n'
    '{"id": "b", "question": "q", "expected_outcome": true, "actual_outcome": false}\n'
)

#: Made by the controller once it has started, before xdist starts its workers.
LATE_FOLDER = """
import os

def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        os.makedirs("../late", exist_ok=True)
"""


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_a_folder_that_appears_after_start_does_not_move_the_workers_rootdir(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: bool
) -> None:
    proj = pytester.path / "proj"
    (proj / "s").mkdir(parents=True)
    (proj / "s" / "j.eval.yaml").write_text(
        "task: jailbreak_guardrails\ninput_path: q.jsonl\nthresholds:\n  accuracy: {min: 0.9}\n", encoding="utf-8"
    )
    (proj / "s" / "q.jsonl").write_text(CASES, encoding="utf-8")
    (proj / "conftest.py").write_text(LATE_FOLDER, encoding="utf-8")
    monkeypatch.chdir(proj)
    summary = proj / "out.json"
    result = pytester.runpytest_subprocess(
        "s", "--evals-report-dir", "../late", "--evals-json", str(summary), *(["-n", "2"] if xdist else [])
    )
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert "suite file not found" not in out
    assert "proj/s/j.eval.yaml" not in out
    result.stdout.fnmatch_lines(["*MISSED GATE j: accuracy = 0.5, required >= 0.9*", "FAILED s/j.eval.yaml::b *"])
    (suite,) = json.loads(summary.read_text(encoding="utf-8"))["suites"]
    assert suite["suite"] == "s/j.eval.yaml"
    assert suite["task"] == "jailbreak_guardrails"
    assert [(g["metric"], g["passed"]) for g in suite["gates"]] == [("accuracy", False)]
    assert suite["cases"]["total"] == 2


def test_the_rootdir_option_keeps_what_addopts_held() -> None:
    assert rootdir_addopts("", "/r") == "--rootdir=/r"
    assert rootdir_addopts("-p no:anyio", "/a b") == "-p no:anyio --rootdir='/a b'"
