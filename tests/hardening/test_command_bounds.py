"""Command targets are bounded (issue 30, attack 9): the timeout kills the command and
everything it started, a daemon it leaves behind neither delays the case nor outlives
it, stdout is capped, and bad ``timeout`` / ``concurrency`` values are a suite ERROR."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.core.core_helpers import jb, write_jsonl, write_suite

SLEEPER = "import sys, time\ntime.sleep(1000)\n"


def _alive(token: str) -> list[int]:
    """Processes whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append(int(entry.name))
    return found


def _settle(token: str, seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (alive := _alive(token)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def _args(xdist: bool, *extra: str) -> list[str]:
    return ["-p", "no:cacheprovider", "-rA", *extra, *(["-n", "2"] if xdist else [])]


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_the_timeout_kills_the_command_and_its_children(pytester: pytest.Pytester, xdist: bool) -> None:
    token = f"evals-orphan-{uuid.uuid4().hex}"
    (pytester.path / "sleeper.py").write_text(SLEEPER, encoding="utf-8")
    # A background child and a foreground one, as `sh -c 'sleep 1000 & sleep 1000; echo {}'`.
    script = f'"{sys.executable}" sleeper.py {token} &\n"{sys.executable}" sleeper.py {token}\necho "{{}}"\n'
    (pytester.path / "target.sh").write_text(script, encoding="utf-8")
    write_jsonl(pytester.path, "data/q.jsonl", [jb(True, None, case_id=f"c{i}") for i in range(3)])
    write_suite(pytester.path, "slow.eval.yaml", task="jailbreak_guardrails", generate=True,
                input_path="data/q.jsonl", target={"command": ["sh", "target.sh"], "timeout": 3})
    started = time.monotonic()
    try:
        result = pytester.runpytest_subprocess(*_args(xdist), timeout=90)
        elapsed = time.monotonic() - started
        result.assert_outcomes(errors=3)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(["*timed out after 3 s (it and the processes it started were killed)*"])
        assert elapsed < 45, elapsed
        assert _settle(token) == [], "the command's children outlived the run"
    finally:
        for pid in _alive(token):
            os.kill(pid, 9)


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_a_daemon_left_behind_neither_delays_nor_outlives_the_case(pytester: pytest.Pytester, xdist: bool) -> None:
    token = f"evals-daemon-{uuid.uuid4().hex}"
    (pytester.path / "sleeper.py").write_text(SLEEPER, encoding="utf-8")
    # Prints its answer, then leaves a child holding stdout and stderr open, and exits.
    script = f'echo \'{{"actual_outcome": true}}\'\n"{sys.executable}" sleeper.py {token} &\nexit 0\n'
    (pytester.path / "target.sh").write_text(script, encoding="utf-8")
    write_jsonl(pytester.path, "data/q.jsonl", [jb(True, None, case_id=f"c{i}") for i in range(3)])
    write_suite(pytester.path, "daemon.eval.yaml", task="jailbreak_guardrails", generate=True,
                input_path="data/q.jsonl", target={"command": ["sh", "target.sh"], "timeout": 20})
    started = time.monotonic()
    try:
        result = pytester.runpytest_subprocess(*_args(xdist), timeout=90)
        result.assert_outcomes(passed=3)
        assert result.ret == pytest.ExitCode.OK
        assert time.monotonic() - started < 20
        assert _settle(token) == [], "the daemon outlived its case"
    finally:
        for pid in _alive(token):
            os.kill(pid, 9)


FLOOD = """
import sys
stream = sys.stdout if sys.argv[1] == "out" else sys.stderr
chunk = "x" * 65536
for _ in range(int(sys.argv[2])):
    stream.write(chunk)
stream.flush()
print('{"actual_outcome": true}')
"""


MEASURE = """\
import resource, subprocess, sys
code = subprocess.call([sys.executable, "-m", "pytest", *sys.argv[1:]])
sys.stdout.flush()
print("peak children KiB", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True)
sys.exit(code)
"""


def test_stdout_is_capped_and_stderr_kept_to_its_tail(pytester: pytest.Pytester) -> None:
    (pytester.path / "flood.py").write_text(FLOOD, encoding="utf-8")
    write_jsonl(pytester.path, "data/q.jsonl", [jb(True, None, case_id="c")])
    # 640 MiB on stdout: stopped at the cap; 640 MiB on stderr: only its tail is kept.
    write_suite(pytester.path, "out.eval.yaml", task="jailbreak_guardrails", generate=True, input_path="data/q.jsonl",
                target={"command": [sys.executable, "flood.py", "out", "10240"], "timeout": 60})
    write_suite(pytester.path, "err.eval.yaml", task="jailbreak_guardrails", generate=True, input_path="data/q.jsonl",
                target={"command": [sys.executable, "flood.py", "err", "10240"], "timeout": 60})
    (pytester.path / "pytest.ini").write_text("[pytest]\nevals_max_response_bytes = 1000000\n", encoding="utf-8")
    # The inner pytest runs under a wrapper whose only child it is, so the wrapper's view
    # of its children's peak memory is the inner run's (this process's own children
    # include whatever other tests ran before, e.g. model loaders under xdist).
    (pytester.path / "measure.py").write_text(MEASURE, encoding="utf-8")
    result = pytester.run(sys.executable, "measure.py", *_args(False), timeout=120)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*printed more than 1000000 bytes on stdout (the limit is evals_max_response_bytes)*"])
    peak_mib = int(result.stdout.lines[-1].split()[-1]) / 1024
    assert peak_mib < 400, peak_mib


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("concurrency", 0, "field 'target.concurrency': expected a whole number of 1 or more, got 0"),
        ("concurrency", -2, "field 'target.concurrency': expected a whole number of 1 or more, got -2"),
        ("concurrency", 1.5, "field 'target.concurrency': expected a whole number of 1 or more, got 1.5"),
        ("timeout", "soon", "field 'target.timeout': expected a number of seconds above 0, got 'soon'"),
        ("timeout", 0, "field 'target.timeout': expected a number of seconds above 0, got 0"),
        ("timeout", -1.5, "field 'target.timeout': expected a number of seconds above 0, got -1.5"),
    ],
)
def test_bad_limits_are_one_suite_error_naming_the_field(
    pytester: pytest.Pytester, field: str, value: object, message: str
) -> None:
    write_jsonl(pytester.path, "data/q.jsonl", [jb(True, None, case_id=f"c{i}") for i in range(3)])
    write_suite(pytester.path, "bad.eval.yaml", task="jailbreak_guardrails", generate=True, input_path="data/q.jsonl",
                target={"command": ["sh", "-c", "echo '{\"actual_outcome\": true}'"], field: value})
    write_jsonl(pytester.path, "data/ok.jsonl", [jb(True, True, case_id="ok")])
    write_suite(pytester.path, "ok.eval.yaml", task="jailbreak_guardrails", input_path="data/ok.jsonl")
    (pytester.path / "pytest.ini").write_text("[pytest]\nevals_case_timeout = 20\n", encoding="utf-8")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-json", "s.json", timeout=60)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*bad.eval.yaml: invalid suite configuration*", f"*{message}*"])
    assert json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))["exit_status"] == 1
