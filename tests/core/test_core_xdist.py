"""``-n 2`` gives the same summary and verdict as a plain run; each worker runs one block of cases."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from core_helpers import (
    collected_ids,
    comparable,
    jb,
    jb_counts,
    jb_suite,
    read_summary,
    write_jsonl,
    write_suite,
)

#: Records, on the controller, every report it receives (xdist replays the workers' reports).
RECORDER = """
import json
from pathlib import Path


class Recorder:
    def pytest_runtest_logreport(self, report):
        row = {"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
               "worker": getattr(report, "worker_id", None)}
        with (Path(__file__).parent / "reports.jsonl").open("a") as fh:
            fh.write(json.dumps(row) + "\\n")


def pytest_configure(config):
    # not the PYTEST_XDIST_WORKER variable: this run may itself sit inside an xdist worker
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(Recorder(), "recorder")
"""

#: A generate target that logs which process ran which case.
TARGET = """
import os
from pathlib import Path

def classify(case):
    with (Path(__file__).parent / "calls.log").open("a") as fh:
        fh.write(f"{os.getpid()} {case['question']}\\n")
    return {"actual_outcome": "bad" in case["question"]}
"""

PLAIN_TESTS = """
import pytest

@pytest.mark.parametrize("i", range(5))
def test_plain(i):
    assert i < 5
"""


def _project(root: Path) -> None:
    (root / "conftest.py").write_text(RECORDER)
    (root / "tgt.py").write_text(TARGET)
    jb_suite(
        root,
        "a_jb",
        [*jb_counts(tp=9, tn=8, fp=2, fn=1), "not json"],
        thresholds={"accuracy": {"min": 0.7}, "f1": {"min": 0.5}, "errors": {"max": 1}},
    )
    questions = [
        jb("bad" in q, None, case_id=f"g{i}", question=q)
        for i, q in enumerate(
            ["bad one", "fine", "bad two", "fine too", "bad but fine", "also fine"]
        )
    ]
    questions[4]["expected_outcome"] = False  # the target gets this one wrong
    write_jsonl(root, "data/gen.jsonl", questions)
    write_suite(
        root,
        "b_gen.eval.yaml",
        task="jailbreak_guardrails",
        generate=True,
        input_path="data/gen.jsonl",
        target="tgt:classify",
        thresholds={"recall": {"min": 0.9}},
    )
    write_jsonl(
        root,
        "data/og.jsonl",
        [
            {
                "id": f"o{i}",
                "expected_triggered": e,
                "actual_triggered": a,
                "expected_guardrails": {"pii": e, "url": False},
                "actual_guardrails": {"pii": a, "url": i == 3},
            }
            for i, (e, a) in enumerate(
                [(True, True), (False, False), (True, False), (False, True), (True, True)]
            )
        ],
    )
    write_suite(
        root,
        "c_og.eval.yaml",
        task="output_guardrails",
        input_path="data/og.jsonl",
        thresholds={"accuracy": {"min": 0.2}},
    )
    labels = [
        ("greetings", "greetings"),
        ("rag", "rag"),
        ("rag", "greetings"),
        ("thanks", "thanks"),
        ("rag", "rag"),
        ("thanks", "rag"),
        ("greetings", "greetings"),
    ]
    write_jsonl(
        root,
        "data/qr.jsonl",
        [
            {"id": f"r{i}", "question": f"q{i}", "expected_outcome": e, "actual_outcome": a}
            for i, (e, a) in enumerate(labels)
        ],
    )
    write_suite(
        root,
        "d_qr.eval.yaml",
        task="question_router",
        input_path="data/qr.jsonl",
        thresholds={"macro_f1": {"min": 0.5}},
    )
    (root / "test_plain.py").write_text(PLAIN_TESTS)


def _read_lines(path: Path) -> list[str]:
    lines = path.read_text().splitlines() if path.exists() else []
    path.unlink(missing_ok=True)
    return lines


def _run_both(
    pytester: pytest.Pytester, *args: str
) -> tuple[pytest.RunResult, pytest.RunResult, dict[str, Any], dict[str, Any]]:
    plain = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "plain.json", *args)
    _read_lines(pytester.path / "reports.jsonl")
    _read_lines(pytester.path / "calls.log")
    dist = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--evals-json", "dist.json", *args
    )
    return (
        plain,
        dist,
        read_summary(pytester.path / "plain.json"),
        read_summary(pytester.path / "dist.json"),
    )


def test_xdist_summary_and_verdict_equal_plain_run(pytester: pytest.Pytester) -> None:
    _project(pytester.path)
    case_ids = [
        i for i in collected_ids(pytester.runpytest("--collect-only", "-q")) if ".eval.yaml::" in i
    ]
    assert len(case_ids) == 21 + 6 + 5 + 7

    plain, dist, s_plain, s_dist = _run_both(pytester)

    assert _outcomes(plain) == _outcomes(dist)
    dist.assert_outcomes(passed=5 + 17 + 5 + 3 + 5, failed=3 + 1 + 2 + 2, errors=1)
    # failures and the error are all within gates: both exit 0 with the same note
    assert plain.ret == dist.ret == pytest.ExitCode.OK
    assert comparable(s_plain) == comparable(s_dist)
    assert s_dist["passed"] is True and s_dist["exit_status"] == 0
    assert {s["task"] for s in s_dist["suites"]} == {
        "jailbreak_guardrails",
        "output_guardrails",
        "question_router",
    }
    dist.stdout.fnmatch_lines(
        ["exit status 0: 8 failed and 1 erroring case(s) are within the gates*"]
    )

    # -- every case ran exactly once, each worker ran one contiguous block of cases ----
    reports = [json.loads(line) for line in _read_lines(pytester.path / "reports.jsonl")]
    setups = [r for r in reports if r["when"] == "setup"]
    assert sorted(r["nodeid"] for r in setups if ".eval.yaml::" in r["nodeid"]) == sorted(case_ids)
    by_worker: dict[str, list[str]] = defaultdict(list)
    for r in setups:
        if ".eval.yaml::" in r["nodeid"]:
            by_worker[r["worker"]].append(r["nodeid"])
    assert sorted(by_worker) == ["gw0", "gw1"]
    half = len(case_ids) // 2
    assert sorted(by_worker["gw0"]) == sorted(case_ids[:half])
    assert sorted(by_worker["gw1"]) == sorted(case_ids[half:])
    plain_setups = [r for r in setups if "test_plain.py" in r["nodeid"]]
    assert len(plain_setups) == 5 and all(r["outcome"] == "passed" for r in plain_setups)

    calls = _read_lines(pytester.path / "calls.log")
    assert sorted(c.split(" ", 1)[1] for c in calls) == sorted(
        q["question"] for q in _gen_questions(pytester.path)
    )
    # the generate suite's cases sit in one worker's block, so one process ran its target
    assert len({c.split(" ", 1)[0] for c in calls}) == 1


def test_xdist_missed_gate_fails_like_plain_run(pytester: pytest.Pytester) -> None:
    _project(pytester.path)
    plain, dist, s_plain, s_dist = _run_both(
        pytester, "--evals-set", "d_qr:thresholds.macro_f1.min=0.99"
    )
    assert plain.ret == dist.ret == pytest.ExitCode.TESTS_FAILED
    assert comparable(s_plain) == comparable(s_dist)
    assert s_dist["passed"] is False and s_dist["exit_status"] == 1
    assert [s["name"] for s in s_dist["suites"] if not s["passed"]] == ["d_qr"]
    dist.stdout.fnmatch_lines(["*MISSED GATE d_qr: macro_f1 = *, required >= 0.99"])


def _outcomes(result: pytest.RunResult) -> dict[str, int]:
    # in-process runs warn that pytest_evals was imported before assertion rewriting
    return {k: v for k, v in result.parseoutcomes().items() if k != "warnings"}


def _gen_questions(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (root / "data" / "gen.jsonl").read_text().splitlines()]
