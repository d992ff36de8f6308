"""Every artifact is written whatever one of them does (issue 30, attack 2).

A report folder under a file, a full disk and a plugin writer that raises each used to
end the run with a traceback: no terminal summary, and the JSON summary, JUnit and run
folder of every suite lost. Now each failure is one ``PROBLEM <artifact> not written
<path>: <reason>`` line in the terminal summary and an ``artifact_problems`` entry in
the JSON summary, the other artifacts are written, and the exit status is 1 (0 only when
every suite passed and every artifact was written). ``--html`` and ``--junitxml`` paths
whose folder cannot be created are usage errors before the run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CASES = "".join(
    json.dumps({"id": f"c{i}", "question": "q" * 3000, "expected_outcome": True, "actual_outcome": True}) + "\n"
    for i in range(5)
)

#: A disk that fills once the run is summarised: files over 4 KiB cannot be written
#: (EFBIG, as ENOSPC would be) until the terminal summary, where it is lifted again.
FULL_DISK = """
import resource, signal, pytest

LIMIT = resource.getrlimit(resource.RLIMIT_FSIZE)

@pytest.hookimpl(tryfirst=True)
def pytest_evals_summary(config):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, LIMIT[1]))

def pytest_terminal_summary():
    resource.setrlimit(resource.RLIMIT_FSIZE, LIMIT)
"""

#: A plugin's writer that fails, registered first so that it runs before the others.
FAILING_WRITER = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_evals_write_outputs(config, summary, report):
    raise RuntimeError("the plugin's own artifact failed")
"""


def build(root: Path) -> None:
    (root / "q.jsonl").write_text(CASES, encoding="utf-8")
    (root / "a.eval.yaml").write_text("task: jailbreak_guardrails\ninput_path: q.jsonl\n", encoding="utf-8")


def n2(xdist: bool) -> list[str]:
    return ["-n", "2"] if xdist else []


def no_traceback(result: pytest.RunResult) -> None:
    both = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in both and "INTERNALERROR" not in both, both


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_a_report_folder_under_a_file_loses_no_other_artifact(pytester: pytest.Pytester, xdist: bool) -> None:
    build(pytester.path)
    (pytester.path / "afile").write_text("x", encoding="utf-8")
    result = pytester.runpytest_subprocess(
        "--evals-report-dir", "afile/runs", "--evals-json", "out.json", "--junitxml", "j.xml",
        "--evals-markdown", "m.md", *n2(xdist),
    )
    no_traceback(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*pytest_evals summary*",
        "a [[]jailbreak_guardrails] a.eval.yaml: 5 cases, 5 passed*-> PASSED",
        "PROBLEM run folder not written *afile/runs/*: Not a directory",
    ])
    doc = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    assert doc["passed"] is True  # the verdicts are the suites'; the exit status says the rest
    assert doc["exit_status"] == 1
    (problem,) = doc["artifact_problems"]
    assert problem["artifact"] == "run folder" and "afile/runs/" in problem["path"]
    assert "evals.a.passed" in (pytester.path / "j.xml").read_text(encoding="utf-8")
    assert "a" in (pytester.path / "m.md").read_text(encoding="utf-8")


def test_a_full_disk_is_one_problem_per_artifact_and_the_small_ones_are_written(pytester: pytest.Pytester) -> None:
    build(pytester.path)
    pytester.makeconftest(FULL_DISK)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--evals-report-dir", "runs", "--evals-json", "out.json", "--junitxml", "j.xml",
        "--evals-markdown", "m.md", "--html", "r.html",
    )
    no_traceback(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*5 cases, 5 passed*-> PASSED",
        "PROBLEM run folder not written *runs/*/results.jsonl: File too large",
        "PROBLEM JSON summary not written out.json: File too large",
        "PROBLEM HTML report not written r.html: File too large",
    ])
    assert "JSON summary: out.json" not in out  # not claimed as written
    (run,) = (pytester.path / "runs").iterdir()
    # the artifacts under the limit are all there
    assert (run / "manifest.json").is_file()
    assert (run / "a" / "config.json").is_file()
    assert "evals.a.passed" in (pytester.path / "j.xml").read_text(encoding="utf-8")
    assert (pytester.path / "m.md").is_file()
    # no temporary file of a failed write is left to fill the disk further
    leftovers = [p.name for p in pytester.path.rglob(".*") if p.suffix in (".tmp", ".unsorted")]
    assert leftovers == []


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_a_plugin_writer_that_raises_loses_no_other_artifact(pytester: pytest.Pytester, xdist: bool) -> None:
    build(pytester.path)
    pytester.makeconftest(FAILING_WRITER)
    result = pytester.runpytest_subprocess(
        "--evals-report-dir", "runs", "--evals-json", "out.json", "--junitxml", "j.xml", *n2(xdist)
    )
    no_traceback(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["PROBLEM the outputs of plugin *conftest.py not written: RuntimeError: the plugin's own artifact failed"]
    )
    doc = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    assert doc["exit_status"] == 1
    assert [p["reason"] for p in doc["artifact_problems"]] == ["RuntimeError: the plugin's own artifact failed"]
    (run,) = (pytester.path / "runs").iterdir()
    assert (run / "results.jsonl").read_text(encoding="utf-8").count("\n") == 5
    assert "evals.a.passed" in (pytester.path / "j.xml").read_text(encoding="utf-8")


def test_a_failing_run_keeps_its_exit_status(pytester: pytest.Pytester) -> None:
    """An artifact problem never turns a failed run's status into something else."""
    build(pytester.path)
    (pytester.path / "q.jsonl").write_text(
        '{"id": "x", "question": "q", "expected_outcome": true, "actual_outcome": false}\n', encoding="utf-8"
    )
    (pytester.path / "afile").write_text("x", encoding="utf-8")
    result = pytester.runpytest_subprocess("--evals-report-dir", "afile/runs", "--evals-json", "out.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    doc = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    assert doc["passed"] is False and doc["exit_status"] == 1 and len(doc["artifact_problems"]) == 1


def test_a_plugin_verdict_that_raises_fails_only_its_suite(pytester: pytest.Pytester) -> None:
    build(pytester.path)
    (pytester.path / "b.eval.yaml").write_text("task: jailbreak_guardrails\ninput_path: q.jsonl\n", encoding="utf-8")
    pytester.makeconftest(
        "def pytest_evals_suite_verdict(config, suite, task, results):\n"
        "    if suite.name == 'b':\n"
        "        raise ValueError('verdict plugin bug')\n"
    )
    result = pytester.runpytest_subprocess("--evals-json", "out.json")
    no_traceback(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    suites = {s["name"]: s for s in json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))["suites"]}
    assert suites["a"]["passed"] is True
    assert suites["b"]["passed"] is False
    assert "a plugin's verdict on this suite failed: ValueError('verdict plugin bug')" in suites["b"]["problems"]


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--html", "afile/r.html", "--html afile/r.html: its folder cannot be created: a file on the way is not a folder*"),
        ("--junitxml", "afile/j.xml", "--junitxml afile/j.xml: its folder cannot be created: a file on the way*"),
        ("--html", "folder", "--html folder: is a folder, not a file"),
        ("--html", "x" * 5000 + "/r.html", "--html xxx*: its folder cannot be created: File name too long"),
    ],
)
def test_report_files_that_cannot_be_written_are_usage_errors(
    pytester: pytest.Pytester, option: str, value: str, message: str
) -> None:
    build(pytester.path)
    (pytester.path / "afile").write_text("x", encoding="utf-8")
    (pytester.path / "folder").mkdir()
    result = pytester.runpytest_subprocess(option, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    no_traceback(result)
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_a_pytest_html_hook_that_raises_is_a_problem_of_the_html_report(pytester: pytest.Pytester) -> None:
    build(pytester.path)
    pytester.makeconftest(
        "def pytest_html_results_summary(prefix, summary, postfix, session):\n"
        "    raise RuntimeError('html hook bug')\n"
    )
    result = pytester.runpytest_subprocess("--html", "r.html", "--evals-json", "out.json", "--junitxml", "j.xml")
    no_traceback(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*pytest_evals summary*", "PROBLEM HTML report not written r.html: RuntimeError: html hook bug"])
    doc = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    # written before pytest-html's report, and again after it failed: it says exit 1 too
    assert doc["passed"] is True and doc["exit_status"] == 1
    assert [p["artifact"] for p in doc["artifact_problems"]] == ["HTML report"]
    assert "evals.a.passed" in (pytester.path / "j.xml").read_text(encoding="utf-8")


def test_a_report_folder_name_too_long_is_one_short_problem_line(pytester: pytest.Pytester) -> None:
    build(pytester.path)
    result = pytester.runpytest_subprocess("--evals-report-dir", "x" * 5000, "--evals-json", "out.json")
    no_traceback(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["PROBLEM run folder not written *xxx...xxx* (5* characters): File name too long"])
    assert "x" * 1000 not in result.stdout.str()
    (problem,) = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))["artifact_problems"]
    assert "x" * 5000 in problem["path"]  # the file keeps it whole
