"""Case accounting: every collected case is in the summary, even when its result never
arrived (a SIGKILLed xdist worker, an interrupted run); such a case is an error of kind
``infrastructure`` and fails its suite whatever the gates say."""

from __future__ import annotations

import pytest
from core_helpers import jb, read_summary, suite_by_name, write_jsonl, write_suite

#: Kills the process evaluating the case "die" (once: a marker file remembers it). The
#: worker evaluates cases ahead of its items (worker/prefetch.py): the kill waits until
#: pytest's thread has caught up and waits for this very case, so the case running when
#: the worker dies is the one whose result can never arrive. Killed at once, it was
#: whichever item ran then, and under load that item's result had sometimes already
#: been sent: nothing was lost and the test had nothing to count.
KILLER = """
import os, signal, time
from pathlib import Path

def classify(case):
    marker = Path(__file__).parent / "killed.marker"
    if case["question"] == "die" and not marker.exists():
        marker.write_text(str(os.getpid()))
        time.sleep(2.0)
        os.kill(os.getpid(), signal.SIGKILL)
    return {"actual_outcome": "bad" in case["question"]}
"""

N_CASES = 40
KILL_AT = 30  # in the second worker's block


def _cases() -> list[dict[str, object]]:
    rows = []
    for i in range(N_CASES):
        question = "die" if i == KILL_AT else ("bad" if i % 2 else "fine")
        rows.append(jb(i % 2 == 1, None, case_id=f"c{i:02d}", question=question))
    return rows


def _killer_suite(pytester: pytest.Pytester) -> None:
    (pytester.path / "killer.py").write_text(KILLER)
    write_jsonl(pytester.path, "data/k.jsonl", _cases())
    # A lenient gate: without the accounting, the cases lost with the worker would
    # leave a suite that passes.
    write_suite(
        pytester.path,
        "k.eval.yaml",
        task="jailbreak_guardrails",
        generate=True,
        input_path="data/k.jsonl",
        target="killer:classify",
        thresholds={"accuracy": {"min": 0.5}, "errors": {"max": 100}},
    )


def test_a_killed_worker_loses_no_case(pytester: pytest.Pytester) -> None:
    _killer_suite(pytester)
    # The wait for interrupted workers' last totals made an hour long: a crashed worker
    # must not be waited for at all (its channel may never read as closed; the run
    # ended ~20 s late when it was), so the run still ends well within the timeout.
    pytester.makeconftest(
        "import pytest_evals.llm.llm_plugin as llm_plugin\n\nllm_plugin.WORKER_TOTALS_WAIT = 3600.0\n"
    )
    result = pytester.runpytest_subprocess("-n", "2", "--evals-json", "s.json", "-p", "no:cacheprovider", timeout=240)
    assert (pytester.path / "killed.marker").exists()
    assert result.ret == 1
    out = result.stdout.str()
    assert "IndexError" not in out
    s = suite_by_name(read_summary(pytester.path / "s.json"), "k")
    cases = s["cases"]
    # Every collected case is counted: the lost ones as infrastructure errors.
    assert cases["total"] == cases["expected"] == N_CASES
    lost = cases["expected"] - cases["received"]
    assert lost >= 1
    assert cases["errors_by_kind"]["infrastructure"] == lost
    assert cases["passed"] + cases["failed"] + cases["errors"] == N_CASES
    assert s["passed"] is False
    assert any("returned no result" in p and "k.eval.yaml::c" in p for p in s["problems"])
    result.stdout.fnmatch_lines(["*cases collected: 40, results received: *", "*PROBLEM k: * returned no result*"])


def test_an_interrupted_run_counts_the_cases_it_never_ran(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path, "data/q.jsonl", [jb(True, False, case_id="miss")] + [jb(True, True, case_id=f"c{i}") for i in range(5)])
    write_suite(pytester.path, "q.eval.yaml", task="jailbreak_guardrails", input_path="data/q.jsonl",
                thresholds={"accuracy": {"min": 0.1}})
    result = pytester.runpytest("--maxfail=1", "--evals-json", "s.json")
    assert result.ret == 1
    s = suite_by_name(read_summary(pytester.path / "s.json"), "q")
    assert s["cases"]["expected"] == 6 and s["cases"]["received"] == 1
    # Issue 25 changed this: the cases the run stopped before (--maxfail) are counted as
    # not run, which makes the suite PARTIAL, rather than as infrastructure errors (they
    # were no crash).
    assert s["cases"]["errors_by_kind"] == {} and s["cases"]["not_run"] == 5
    assert s["cases"]["population"] == 6
    assert s["passed"] is False and s["partial"] is True
    assert "partial run: 1 of 6 cases run (not run 5)" in s["reasons"][-1]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_complete_run_received_everything(pytester: pytest.Pytester, workers: list[str]) -> None:
    write_jsonl(pytester.path, "data/q.jsonl", [jb(True, True, case_id=f"c{i}") for i in range(7)])
    write_suite(pytester.path, "q.eval.yaml", task="jailbreak_guardrails", input_path="data/q.jsonl")
    run = pytester.runpytest_subprocess if workers else pytester.runpytest
    result = run(*workers, "--evals-json", "s.json", "-p", "no:cacheprovider")
    assert result.ret == 0
    s = suite_by_name(read_summary(pytester.path / "s.json"), "q")
    assert (s["cases"]["expected"], s["cases"]["received"], s["passed"]) == (7, 7, True)
