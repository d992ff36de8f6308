"""The progress display: lines, rates, running metric, xdist, no control characters."""

from __future__ import annotations

import json
import re

import pytest

from pytest_evals.controller.progress import ProgressState, format_duration

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def test_progress_line_by_hand() -> None:
    state = ProgressState(total=1_000, started=100.0)
    for i in range(200):
        state.record({"task": "halueval", "suite": "s/halueval.eval.yaml", "status": "passed" if i % 4 else "failed",
                      "data": {"task_type": "qa" if i < 150 else "general"}})
    state.record({"task": "question_router", "suite": "s/router.eval.yaml", "status": "error", "data": {}})
    state.done = 201
    line = state.line(now=150.0)  # 201 items in 50 s -> 4.02/s, 799 left -> 199 s
    assert line == (
        "[evals] 201/1,000 items (20.1%) | 4.0 items/s | ETA 0:03:19 | "
        "qa acc 0.747 (n=150); general acc 0.760 (n=50); router pass n/a (n=0, 1 err)"
    )


def test_progress_line_when_done() -> None:
    state = ProgressState(total=2, done=2, started=0.0)
    assert state.line(now=3725.0).startswith("[evals] 2/2 items (100.0%) | 0.0 items/s | elapsed 1:02:05")
    assert format_duration(59.6) == "0:01:00"


SUITE = "task: question_router\ninput_path: cases.jsonl\n"


def router_suite(pytester: pytest.Pytester, n: int) -> None:
    pytester.makefile(".eval.yaml", router=SUITE)
    lines = [
        json.dumps({"id": f"c{i}", "question": "q", "expected_outcome": "a", "actual_outcome": "a" if i % 3 else "b"})
        for i in range(n)
    ]
    pytester.path.joinpath("cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


LINE = re.compile(r"^\[evals\] (\d+)/30 items \(\d+\.\d%\) \| [\d,.]+ items/s \| (ETA|elapsed) \d+:\d\d:\d\d \| router pass ([\d.]+) \(n=(\d+)\)$")


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_forced_progress_plain_lines(pytester: pytest.Pytester, workers: list[str]) -> None:
    router_suite(pytester, 30)
    result = pytester.runpytest_subprocess(
        "router.eval.yaml", "--evals-progress", "-o", "evals_progress_interval=0", "-p", "no:cacheprovider", *workers
    )
    text = result.stdout.str()
    assert "\x1b" not in text and "\r" not in text
    lines = [ln for ln in text.splitlines() if ln.startswith("[evals]")]
    assert len(lines) == 30, text
    matches = [LINE.match(ln) for ln in lines]
    assert all(matches), lines
    done = [int(m.group(1)) for m in matches if m]
    assert done == list(range(1, 31))
    last = matches[-1]
    assert last is not None and last.group(2) == "elapsed"
    # 10 of the 30 cases fail (i % 3 == 0): final pass rate 20/30
    assert last.group(3) == "0.667" and last.group(4) == "30"


def test_progress_off_by_default_for_small_runs(pytester: pytest.Pytester) -> None:
    router_suite(pytester, 12)
    result = pytester.runpytest_subprocess("router.eval.yaml", "-p", "no:cacheprovider")
    assert "[evals] " not in result.stdout.str()
    result = pytester.runpytest_subprocess(
        "router.eval.yaml", "-p", "no:cacheprovider", "-o", "evals_progress_min_items=10"
    )
    assert "[evals] 12/12 items" in result.stdout.str()
    result = pytester.runpytest_subprocess(
        "router.eval.yaml", "-p", "no:cacheprovider", "-o", "evals_progress_min_items=10", "--no-evals-progress"
    )
    assert "[evals] " not in result.stdout.str()
