"""SIGTERM, what CI runners send on cancel or timeout, writes everything Ctrl-C writes
(issue 30, attack 4), and the run's result spool never outlives the run.

Each run here is a real ``python -m pytest`` process stopped mid-flight: a slow Python
target holds cases open, the test waits until they have started, then signals the
controller. The process's system temp folder (``TMPDIR``) is private to the test, so
"no spool file left anywhere" is checked on the whole of it, not guessed at by name.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.core.core_helpers import jb, write_jsonl, write_suite

SLOW_TARGET = """
import os, pathlib, time

def classify(case):
    if case["question"].startswith("slow"):
        folder = pathlib.Path("started")
        folder.mkdir(exist_ok=True)
        (folder / str(os.getpid())).touch()
        time.sleep(300)
    return {"actual_outcome": case["question"].endswith("yes")}
"""

#: Fast cases first in each half (each xdist worker runs one half), then slow ones.
QUESTIONS = ["fast yes", "fast no", "slow a", "slow b", "slow c"] * 2


def _build(root: Path) -> None:
    (root / "target.py").write_text(SLOW_TARGET, encoding="utf-8")
    rows = [jb(True, None, case_id=f"c{i}", question=q) for i, q in enumerate(QUESTIONS)]
    write_jsonl(root, "data/q.jsonl", rows)
    write_suite(root, "slow.eval.yaml", task="jailbreak_guardrails", generate=True, input_path="data/q.jsonl",
                target="target:classify")
    write_jsonl(root, "data/saved.jsonl", [jb(True, True, case_id="a"), jb(False, False, case_id="b")])
    write_suite(root, "saved.eval.yaml", task="jailbreak_guardrails", input_path="data/saved.jsonl")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie nobody reaped (a container's init may not) has ended
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in state


def _leftovers(folder: Path) -> list[Path]:
    """Anything of a result spool under ``folder``: the old loose pickles, the spool folders."""
    return [p for p in folder.rglob("*") if "evals" in p.name and ("spool" in p.name or p.suffix == ".pickle")]


def _interrupt(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, sig: int, extra: list[str],
               workers: int, build: Callable[[Path], None] = _build, group: bool = False) -> tuple[int, list[int], Path]:
    build(pytester.path)
    systmp = pytester.path / "systmp"
    systmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(systmp))
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "--evals-json", "out/summary.json",
            "--junitxml", "out/junit.xml", "--evals-report-dir", "out/runs", "--html", "out/report.html", *extra]
    log = pytester.path / "pytest-output.txt"
    with log.open("wb") as out:
        proc = pytester.popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                              start_new_session=group)
    started = pytester.path / "started"
    # Mid-flight: the slow cases are running (in every worker) and the fast case c1 has
    # been reported, so the run has results to write and cases still open.
    reported = re.compile(r"::c1 (PASSED|FAILED)|(PASSED|FAILED) slow\.eval\.yaml::c1\b")
    try:
        deadline = time.monotonic() + 180
        while (len(list(started.glob("*")) if started.exists() else []) < workers
               or not reported.search(log.read_text(errors="replace"))):
            assert proc.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.1)
        if group:  # to every process of the run at once, as some runners do
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        status = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    pids = [int(p.name) for p in started.glob("*")]
    return status, pids, systmp


def _check_artifacts(root: Path, signal_name: str) -> None:
    summary = json.loads((root / "out/summary.json").read_text(encoding="utf-8"))
    assert summary["exit_status"] == pytest.ExitCode.INTERRUPTED
    assert summary["interrupted"] == signal_name
    assert summary["passed"] is False
    suites = {s["name"]: s for s in summary["suites"]}
    slow = suites["slow"]["cases"]
    # The fast cases that finished are counted; the slow ones are "not run", not lost.
    assert slow["passed"] >= 1, slow
    assert slow["not_run"] >= 1, slow
    assert slow["errors"] == 0, slow
    assert slow["received"] + slow["not_run"] == len(QUESTIONS), slow
    ET.parse(root / "out/junit.xml")  # complete, parseable XML
    assert "</html>" in (root / "out/report.html").read_text(encoding="utf-8")
    (run_folder,) = (root / "out/runs").iterdir()
    folder_summary = json.loads((run_folder / "summary.json").read_text(encoding="utf-8"))
    assert folder_summary["interrupted"] == signal_name
    lines = (run_folder / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines and all(json.loads(line)["suite"] for line in lines)
    assert (run_folder / "manifest.json").is_file()


@pytest.mark.parametrize(("xdist", "group"), [(False, False), (True, False), (True, True)],
                         ids=["plain", "n2", "n2-process-group"])
def test_sigterm_writes_every_artifact_and_exits_as_interrupted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: bool, group: bool
) -> None:
    status, pids, systmp = _interrupt(pytester, monkeypatch, signal.SIGTERM, ["-n", "2"] if xdist else [],
                                      workers=2 if xdist else 1, group=group)
    # The status Ctrl-C gives (pytest's INTERRUPTED), not 143 (killed by SIGTERM).
    assert status == pytest.ExitCode.INTERRUPTED, (pytester.path / "pytest-output.txt").read_text()
    _check_artifacts(pytester.path, "SIGTERM")
    assert _leftovers(systmp) == []
    # The processes that ran the slow cases (the workers under -n 2) are gone.
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in pids if _alive(pid)]


def test_sigint_writes_the_same_and_marks_it(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    status, _pids, systmp = _interrupt(pytester, monkeypatch, signal.SIGINT, [], workers=1)
    assert status == pytest.ExitCode.INTERRUPTED
    _check_artifacts(pytester.path, "SIGINT")
    assert _leftovers(systmp) == []


RAISING_WRITER = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_evals_write_outputs(config, summary, report):
    list(report.iter_full_results())  # the spool exists now
    (config.rootpath / "spool-folder.txt").write_text(str(report.spool.folder))
    raise RuntimeError("this writer breaks")
"""


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_the_spool_is_removed_when_a_writer_raises(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: bool
) -> None:
    systmp = pytester.path / "systmp"
    systmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(systmp))
    pytester.makeconftest(RAISING_WRITER)
    write_jsonl(pytester.path, "data/saved.jsonl", [jb(True, True, case_id="a"), jb(False, True, case_id="b")])
    write_suite(pytester.path, "saved.eval.yaml", task="jailbreak_guardrails", input_path="data/saved.jsonl")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *(["-n", "2"] if xdist else []), timeout=180)
    assert result.ret != pytest.ExitCode.OK
    folder = Path((pytester.path / "spool-folder.txt").read_text())
    # It lived in the run's own temporary folder (the --basetemp pytester gives its
    # subprocess runs), not loose in the system temp folder...
    assert folder.parent.name.startswith("runpytest-"), folder
    # ...and is gone, as is anything else of a spool.
    assert not folder.exists()
    assert _leftovers(pytester.path) == []


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_a_normal_run_leaves_no_spool(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: bool) -> None:
    systmp = pytester.path / "systmp"
    systmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(systmp))
    write_jsonl(pytester.path, "data/saved.jsonl", [jb(True, True, case_id="a"), jb(False, True, case_id="b")])
    write_suite(pytester.path, "saved.eval.yaml", task="jailbreak_guardrails", input_path="data/saved.jsonl")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-report-dir", "runs",
                                           *(["-n", "2"] if xdist else []), timeout=180)
    result.assert_outcomes(passed=1, failed=1)
    (run_folder,) = (pytester.path / "runs").iterdir()
    assert len((run_folder / "results.jsonl").read_text(encoding="utf-8").splitlines()) == 2
    summary = json.loads((run_folder / "summary.json").read_text(encoding="utf-8"))
    assert summary["interrupted"] is None
    assert _leftovers(pytester.path) == []


COMMAND = """
import os, pathlib, subprocess, sys

case = sys.stdin.read()
if "slow" in case:
    folder = pathlib.Path("started")
    folder.mkdir(exist_ok=True)
    child = subprocess.Popen(["sleep", "300"])  # a child of the command: same process group
    (folder / str(child.pid)).touch()
    child.wait()
print('{"actual_outcome": true}')
"""


def _build_command(root: Path) -> None:
    (root / "command.py").write_text(COMMAND, encoding="utf-8")
    rows = [jb(True, None, case_id=f"c{i}", question=q) for i, q in enumerate(QUESTIONS)]
    write_jsonl(root, "data/q.jsonl", rows)
    write_suite(root, "slow.eval.yaml", task="jailbreak_guardrails", generate=True, input_path="data/q.jsonl",
                target={"command": [sys.executable, "command.py"], "timeout": 600})
    write_jsonl(root, "data/saved.jsonl", [jb(True, True, case_id="a"), jb(False, False, case_id="b")])
    write_suite(root, "saved.eval.yaml", task="jailbreak_guardrails", input_path="data/saved.jsonl")


def test_sigterm_under_xdist_leaves_no_command_target_behind(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers stop their cases: the command targets' process groups (a child the
    command started included) are killed, not left running after pytest."""
    status, pids, systmp = _interrupt(pytester, monkeypatch, signal.SIGTERM, ["-n", "2"], workers=2,
                                      build=_build_command)
    assert status == pytest.ExitCode.INTERRUPTED
    _check_artifacts(pytester.path, "SIGTERM")
    assert _leftovers(systmp) == []
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pids and not [pid for pid in pids if _alive(pid)]


SIGTERM_WHILE_WRITING = """
import os, signal, time
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_evals_write_outputs(config, summary, report):
    os.kill(os.getpid(), signal.SIGTERM)  # a CI runner's SIGTERM, as the outputs are written
    time.sleep(0.5)  # the handler runs here, at the next instruction
"""


def test_a_sigterm_while_the_outputs_are_written_does_not_cut_them_short(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    systmp = pytester.path / "systmp"
    systmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(systmp))
    pytester.makeconftest(SIGTERM_WHILE_WRITING)
    # Two implementations of one hook cannot share a module: the second is a plugin file.
    pytester.makepyfile(last_writer='''
import pytest

@pytest.hookimpl(trylast=True)
def pytest_evals_write_outputs(config, summary, report):
    (config.rootpath / "last-writer-ran").touch()
''')
    write_jsonl(pytester.path, "data/saved.jsonl", [jb(True, True, case_id="a"), jb(False, True, case_id="b")])
    write_suite(pytester.path, "saved.eval.yaml", task="jailbreak_guardrails", input_path="data/saved.jsonl")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "last_writer", "--evals-json",
                                           "out/summary.json", timeout=180)
    # Every case had run: the verdict stands (a failed case, no gates: 1), every writer ran.
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert (pytester.path / "last-writer-ran").exists()
    summary = json.loads((pytester.path / "out/summary.json").read_text(encoding="utf-8"))
    assert summary["exit_status"] == 1
    assert summary["interrupted"] is None
    assert _leftovers(pytester.path) == []
