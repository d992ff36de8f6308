"""A target that exits or interrupts costs its case, not the run (issue 30, attack 1).

A click or argparse ``main()`` used as a target raises ``SystemExit``; a target may raise
``KeyboardInterrupt`` or its own ``BaseException``. Each is that case's ERROR (kind
target); the other cases run, and the exit code is the summary's verdict (1), never 0,
2, 3 or 130.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pytest_evals.hardening.code_escapes import is_code_escape, watch_interrupts
from tests.core.core_helpers import jb, write_jsonl, write_suite

TARGET = """
import asyncio

class Escape(BaseException):
    pass

def _act(q):
    if q == "exit0":
        raise SystemExit(0)
    if q == "exit3":
        raise SystemExit(3)
    if q == "interrupt":
        raise KeyboardInterrupt
    if q == "escape":
        raise Escape("out of here")
    return {"actual_outcome": "bad" in q}

def sync_target(case):
    return _act(case["question"])

async def async_target(case):
    if case["question"] == "sleep":
        await asyncio.sleep(0)
    return _act(case["question"])
"""

ODD = ["exit0", "exit3", "interrupt", "escape"]


def _build(root, target: str) -> None:
    (root / "target.py").write_text(TARGET, encoding="utf-8")
    rows = [jb(True, None, case_id="ok-bad", question="bad one"), jb(False, None, case_id="ok-fine", question="fine")]
    rows += [jb(True, None, case_id=q, question=q) for q in ODD]
    rows += [jb(False, None, case_id="ok-last", question="fine again")]
    write_jsonl(root, "data/q.jsonl", rows)
    write_suite(root, "exits.eval.yaml", task="jailbreak_guardrails", generate=True, input_path="data/q.jsonl",
                target=f"target:{target}")
    # A second suite after it: it must run and be counted too.
    write_jsonl(root, "data/after.jsonl", [jb(True, True, case_id="a"), jb(False, False, case_id="b")])
    write_suite(root, "after.eval.yaml", task="jailbreak_guardrails", input_path="data/after.jsonl")
    # A stopped engine loop would leave cases waiting for this long, not 900 s.
    (root / "pytest.ini").write_text("[pytest]\nevals_case_timeout = 30\n", encoding="utf-8")


@pytest.mark.parametrize("target", ["sync_target", "async_target"])
@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_exiting_targets_are_case_errors(pytester: pytest.Pytester, xdist: bool, target: str) -> None:
    _build(pytester.path, target)
    args = ["-p", "no:cacheprovider", "--evals-json", "out/summary.json", "-rA"] + (["-n", "2"] if xdist else [])
    result = pytester.runpytest_subprocess(*args, timeout=120)
    out = result.stdout.str()
    result.assert_outcomes(passed=5, errors=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    summary = json.loads((pytester.path / "out/summary.json").read_text(encoding="utf-8"))
    assert summary["exit_status"] == 1
    for pattern in ("*raised SystemExit: 0*", "*raised SystemExit: 3*", "*raised KeyboardInterrupt*",
                    "*raised Escape: out of here*"):
        result.stdout.fnmatch_lines([pattern])
    exits = next(s for s in summary["suites"] if s["name"].startswith("exits"))
    assert exits["cases"]["errors"] == 4, exits["cases"]
    assert exits["cases"]["errors_by_kind"] == {"target": 4}


SLOW_TARGET = """
import pathlib, time

def slow(case):
    pathlib.Path("started").touch()
    time.sleep(120)
    return {"actual_outcome": True}
"""


def test_a_person_s_interrupt_still_interrupts(pytester: pytest.Pytester) -> None:
    """Ctrl-C while a target runs ends the run (exit 2) instead of becoming a case error."""
    (pytester.path / "target.py").write_text(SLOW_TARGET, encoding="utf-8")
    write_jsonl(pytester.path, "data/q.jsonl", [jb(True, None, case_id=f"c{i}") for i in range(3)])
    write_suite(pytester.path, "slow.eval.yaml", task="jailbreak_guardrails", generate=True,
                input_path="data/q.jsonl", target="target:slow")
    proc = pytester.popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (pytester.path / "started").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the target never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        status = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert status == pytest.ExitCode.INTERRUPTED


def test_an_interrupt_on_the_main_thread_after_sigint_is_the_person_s() -> None:
    """Cases evaluated on pytest's own thread (inline, driven) see a person's SIGINT as a
    KeyboardInterrupt raised in whatever code runs: after a SIGINT it propagates."""
    assert is_code_escape(KeyboardInterrupt())
    undo = watch_interrupts()
    try:
        with pytest.raises(KeyboardInterrupt) as caught:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the handler runs at the next bytecode
        assert not is_code_escape(caught.value)
        assert is_code_escape(SystemExit(0))
    finally:
        undo()
    assert is_code_escape(KeyboardInterrupt())


def test_the_package_s_own_control_flow_passes() -> None:
    from pytest_evals.llm.batch.batch_gate import BatchPending
    from pytest_evals.worker.inline_eval import NeedsIO

    for exc in (NeedsIO(), BatchPending(), asyncio.CancelledError(), GeneratorExit(), ValueError()):
        assert not is_code_escape(exc)
    assert is_code_escape(SystemExit(3))


def test_a_hung_python_target_does_not_hold_pytest_open(pytester: pytest.Pytester) -> None:
    """The case times out (ini evals_case_timeout) and pytest exits: the stuck call is on a
    daemon thread, not one the interpreter waits for at exit."""
    (pytester.path / "target.py").write_text(SLOW_TARGET, encoding="utf-8")
    write_jsonl(pytester.path, "data/q.jsonl", [jb(True, None, case_id="stuck")])
    write_suite(pytester.path, "slow.eval.yaml", task="jailbreak_guardrails", generate=True,
                input_path="data/q.jsonl", target="target:slow")
    (pytester.path / "pytest.ini").write_text("[pytest]\nevals_case_timeout = 2\n", encoding="utf-8")
    started = time.monotonic()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=60)
    assert time.monotonic() - started < 30
    result.assert_outcomes(errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
