"""A suite knows its whole population (issue 25): a verdict on part of a suite says so.

The issue's suite: 100 jailbreak cases with precision 0.80 (40 TP, 40 TN, 10 FP, 10 FN)
and the gate ``precision: {min: 0.85}``. Run whole it misses its gate; ``-k "not fp"``,
``--deselect``, ``--lf``, skip marks, ``-x``/``--maxfail`` leave a selection on which
the gate passes, and such a run used to exit 0. Now the suite is PARTIAL: the run fails
unless ``--evals-allow-partial``, and then every output says PARTIAL. Each check runs
plain and under ``-n 2`` (the xdist controller collects nothing: the workers send the
population).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
from core_helpers import jb, read_summary, suite_by_name, write_jsonl, write_suite

from pytest_evals.regression.markdown_summary import render
from pytest_evals.reports.summary_html import run_section

WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
PARTIAL_LINE = "partial run: {} of 100 cases run ({}); the gates cover only those cases"


def issue_suite(pytester: pytest.Pytester, thresholds: dict[str, Any] | None = None, **fields: Any) -> None:
    """The issue's 100-case suite; ids say what each case is (tp-00, fp-03...)."""
    kinds = (("tp", True, True, 40), ("tn", False, False, 40), ("fp", False, True, 10), ("fn", True, False, 10))
    rows = [jb(e, a, case_id=f"{kind}-{i:02d}") for kind, e, a, n in kinds for i in range(n)]
    write_jsonl(pytester.path, "data/issue.jsonl", rows)
    write_suite(
        pytester.path,
        "issue.eval.yaml",
        task="jailbreak_guardrails",
        input_path="data/issue.jsonl",
        thresholds=thresholds if thresholds is not None else {"precision": {"min": 0.85}},
        **fields,
    )


def run(pytester: pytest.Pytester, workers: list[str], *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    runner = pytester.runpytest_subprocess if workers else pytester.runpytest
    result = runner(*workers, *args, "--evals-json", "s.json")
    return result, read_summary(pytester.path / "s.json")


@WORKERS
def test_the_whole_suite_misses_its_gate(pytester: pytest.Pytester, workers: list[str]) -> None:
    issue_suite(pytester)
    result, summary = run(pytester, workers, "-p", "no:cacheprovider")
    assert result.ret == 1
    s = suite_by_name(summary, "issue")
    assert s["metrics"]["precision"]["value"] == pytest.approx(0.8)
    assert s["partial"] is False and summary["partial"] is False
    # A complete run's population is its expected cases: no population keys.
    assert "population" not in s["cases"] and s["cases"]["expected"] == 100


@WORKERS
@pytest.mark.parametrize(
    ("selection", "kept", "why"),
    [
        (["-k", "not fp"], 90, "deselected 10"),
        ([arg for i in range(6) for arg in ("--deselect", f"issue.eval.yaml::fp-{i:02d}")], 94, "deselected 6"),
    ],
    ids=["k", "deselect"],
)
def test_a_selection_is_partial_and_cannot_pass(
    pytester: pytest.Pytester, workers: list[str], selection: list[str], kept: int, why: str
) -> None:
    issue_suite(pytester)
    result, summary = run(pytester, workers, "-p", "no:cacheprovider", *selection)
    s = suite_by_name(summary, "issue")
    # On the selection the gate passes; the suite still fails: it measured part of itself.
    assert [g["passed"] for g in s["gates"]] == [True]
    assert result.ret == 1
    assert s["passed"] is False and s["partial"] is True and summary["partial"] is True
    assert s["cases"]["population"] == 100 and s["cases"]["expected"] == kept
    assert s["cases"]["deselected"] == 100 - kept
    assert s["reasons"] == [PARTIAL_LINE.format(kept, why) + " (--evals-allow-partial accepts a partial run)"]
    result.stdout.fnmatch_lines(["*-> FAILED", f"  PARTIAL issue: {PARTIAL_LINE.format(kept, why)}*"])


@WORKERS
def test_allow_partial_passes_and_says_partial_everywhere(pytester: pytest.Pytester, workers: list[str]) -> None:
    issue_suite(pytester)
    result, summary = run(
        pytester, workers, "-p", "no:cacheprovider", "-k", "not fp", "--evals-allow-partial",
        "--junitxml", "junit.xml", "--evals-markdown", "summary.md",
    )
    assert result.ret == 0, result.stdout.str()
    s = suite_by_name(summary, "issue")
    assert s["passed"] is True and s["partial"] is True
    assert summary["partial"] is True and summary["allow_partial"] is True
    assert s["cases"]["population"] == 100 and s["cases"]["deselected"] == 10
    # terminal
    result.stdout.fnmatch_lines(
        ["*issue.eval.yaml: 90 cases, * -> PARTIAL", "  PARTIAL issue: 90 of 100 cases run (deselected 10); the gates cover only those cases"]
    )
    # JUnit properties
    root = ET.parse(pytester.path / "junit.xml").getroot()
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["evals.issue.passed"] == "true" and props["evals.issue.partial"] == "true"
    assert props["evals.issue.population"] == "90 of 100 cases run (deselected 10)"
    # Markdown
    markdown = (pytester.path / "summary.md").read_text(encoding="utf-8")
    assert "## pytest_evals: ⚠️ PARTIAL" in markdown and "| PARTIAL |" in markdown
    assert "**PARTIAL**: 90 of 100 cases run \\(deselected 10\\)" in markdown
    assert markdown == render(summary)
    # HTML (the report's summary is built from the same JSON)
    html = run_section(summary, {}, {}, None, None)
    assert '<span class="evals-partial evals-verdict">PARTIAL</span> issue' in html
    assert "PARTIAL: 90 of 100 cases run (deselected 10); the gates cover only those cases" in html


@WORKERS
def test_the_ini_allows_partial_runs_too(pytester: pytest.Pytester, workers: list[str]) -> None:
    issue_suite(pytester)
    pytester.makeini("[pytest]\nevals_allow_partial = true\n")
    result, summary = run(pytester, workers, "-p", "no:cacheprovider", "-k", "not fp")
    assert result.ret == 0 and suite_by_name(summary, "issue")["partial"] is True


@WORKERS
def test_last_failed_runs_a_partial_suite(pytester: pytest.Pytester, workers: list[str]) -> None:
    issue_suite(pytester)
    first, _ = run(pytester, workers)
    assert first.ret == 1
    # --lf trims the suite file's items in place (no pytest_deselected): still counted.
    result, summary = run(pytester, workers, "--lf")
    s = suite_by_name(summary, "issue")
    assert s["cases"]["total"] == 20 and s["cases"]["failed"] == 20
    assert (s["cases"]["population"], s["cases"]["deselected"]) == (100, 80)
    assert result.ret == 1 and s["partial"] is True
    assert any(r.startswith(PARTIAL_LINE.format(20, "deselected 80")) for r in s["reasons"])


@WORKERS
def test_maxfail_leaves_cases_not_run_not_crashed(pytester: pytest.Pytester, workers: list[str]) -> None:
    issue_suite(pytester, thresholds={"accuracy": {"min": 0.5}})
    result, summary = run(pytester, workers, "-p", "no:cacheprovider", "--maxfail", "3")
    # pytest's own status: 1 plain, 2 (interrupted) under xdist; never 0.
    assert result.ret in (1, 2)
    s = suite_by_name(summary, "issue")
    c = s["cases"]
    assert c["not_run"] > 0 and "infrastructure" not in c["errors_by_kind"]
    assert c["expected"] == 100 and c["received"] == c["total"] == 100 - c["not_run"]
    assert s["partial"] is True and s["passed"] is False
    assert not any("returned no result" in p for p in s["problems"])
    assert f"not run {c['not_run']}" in s["reasons"][-1]


SKIP_MARKS = """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if item.name.startswith("tn-0"):
            item.add_marker(pytest.mark.skip(reason="not today"))
        elif item.name.startswith("fp-0"):
            item.add_marker(pytest.mark.xfail(reason="known false positives"))
"""


@WORKERS
def test_skip_and_xfail_marks_from_a_conftest(pytester: pytest.Pytester, workers: list[str]) -> None:
    issue_suite(pytester)
    pytester.makeconftest(SKIP_MARKS)
    result, summary = run(pytester, workers, "-p", "no:cacheprovider", "-rs")
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and result.ret == 1
    result.stdout.fnmatch_lines(["*10 skipped, 10 xfailed*"])
    s = suite_by_name(summary, "issue")
    c = s["cases"]
    assert (c["total"], c["skipped"], c["xfailed"], c["xpassed"]) == (100, 10, 10, 0)
    assert c["errors"] == 0 and c["errors_by_kind"] == {}
    # XFAIL cases are measured (their false positives stay in precision); the skipped
    # ones are not, which makes the suite partial.
    assert s["metrics"]["precision"]["value"] == pytest.approx(0.8)
    assert s["metrics"]["cases"]["value"] == 100
    assert s["partial"] is True
    assert PARTIAL_LINE.format(90, "skipped 10") in " ".join(s["reasons"])
    # pytest's skip line points at the suite file's first line.
    result.stdout.fnmatch_lines(["SKIPPED [10] issue.eval.yaml:1: not today"])


SETUP_HOOK_SKIP = """
import pytest

def pytest_runtest_setup(item):
    if item.name.startswith("tn-1"):
        pytest.skip("no time for these")
"""


@WORKERS
def test_a_skip_in_a_setup_hook_is_a_skip_not_a_crash(pytester: pytest.Pytester, workers: list[str]) -> None:
    issue_suite(pytester)
    pytester.makeconftest(SETUP_HOOK_SKIP)
    result, summary = run(pytester, workers, "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert "worker crash" not in out and "no result received" not in out
    s = suite_by_name(summary, "issue")
    c = s["cases"]
    assert (c["skipped"], c["errors"], c["received"], c["expected"]) == (10, 0, 100, 100)
    assert s["partial"] is True and result.ret == 1
    assert not s["problems"]


XFAIL_ALL_MISSES = """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if item.name.startswith(("fp-", "fn-")):
            item.add_marker(pytest.mark.xfail(reason="known misses"))
        if item.name == "tp-00":
            item.add_marker(pytest.mark.xfail(reason="passes anyway", strict={strict}))
"""


@WORKERS
@pytest.mark.parametrize("strict", [False, True], ids=["xpass", "strict-xpass"])
def test_xfail_rule_on_a_suite_without_gates(pytester: pytest.Pytester, workers: list[str], strict: bool) -> None:
    """Expected failures (XFAIL) need no gate, as in pytest; a strict XPASS fails the run."""
    issue_suite(pytester, thresholds={})
    pytester.makeconftest(XFAIL_ALL_MISSES.format(strict=strict))
    result, summary = run(pytester, workers, "-p", "no:cacheprovider")
    s = suite_by_name(summary, "issue")
    assert (s["cases"]["xfailed"], s["cases"]["xpassed"]) == (20, 1)
    assert s["cases"]["failed"] == 20 and s["partial"] is False
    assert s["passed"] is True and s["reasons"] == []
    assert result.ret == (1 if strict else 0), result.stdout.str()


@WORKERS
def test_evals_sample_on_a_task_that_cannot_sample_is_a_usage_error(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    issue_suite(pytester)
    runner = pytester.runpytest_subprocess if workers else pytester.runpytest
    result = runner(*workers, "-p", "no:cacheprovider", "--evals-sample", "10")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --evals-sample 10: these suites' tasks cannot sample*jailbreak_guardrails (issue.eval.yaml)*"]
    )


ASYNC_TARGET = """
import asyncio

async def classify(case):
    await asyncio.sleep(0.01)  # waits on the loop: the case goes through the prefetcher
    return {"actual_outcome": "bad" in case["question"]}
"""


@WORKERS
def test_a_rerun_of_a_generate_case_is_evaluated_again_not_waited_for(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytest.importorskip("pytest_rerunfailures")
    (pytester.path / "target.py").write_text(ASYNC_TARGET)
    rows = [jb(i % 2 == 1, None, case_id=f"c{i}", question=f"{'bad' if i % 2 else 'fine'} {i}") for i in range(6)]
    rows[2]["expected_outcome"] = True  # the target answers False: c2 fails, every attempt
    write_jsonl(pytester.path, "data/r.jsonl", rows)
    write_suite(pytester.path, "r.eval.yaml", task="jailbreak_guardrails", generate=True,
                input_path="data/r.jsonl", target="target:classify", thresholds={"accuracy": {"min": 0.5}})
    # A rerun used to wait this long on a prefetched result already handed out, then error.
    pytester.makeini("[pytest]\nevals_case_timeout = 4\n")
    result, summary = run(pytester, workers, "-p", "no:cacheprovider", "--reruns", "1")
    out = result.stdout.str()
    assert "no result after" not in out and "TimeoutError" not in out
    result.stdout.fnmatch_lines(["*1 failed, 5 passed, 1 rerun*"])
    c = suite_by_name(summary, "r")["cases"]
    # The final attempt counts, once.
    assert (c["total"], c["passed"], c["failed"], c["errors"]) == (6, 5, 1, 0)
    assert result.ret == 0
