"""What a suite run imports only when it needs it: the baseline reader (a baseline or a
regression gate), the target runners (a suite that generates) and the endpoint probe's
HTTP stack (a local endpoint, asked before the first case). A rerun answered from the
cache pays for none of them; each check below also runs the path that does need the
module, so a lazy import that went missing would show as that run's failure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from core_helpers import jb, jb_suite, write_jsonl, write_suite

#: Written at the very end of the run, after every hook had its chance to import.
CONFTEST = """
import json, sys
from pathlib import Path

def pytest_unconfigure(config):
    loaded = sorted(m for m in sys.modules if m.startswith("pytest_evals."))
    Path(str(config.rootpath), "loaded.json").write_text(json.dumps(loaded))
"""

BASELINE_READER = ("pytest_evals.regression.baseline_run", "pytest_evals.output.run_reader")
TARGET_RUNNERS = ("pytest_evals.targets.daemon_threads", "pytest_evals.targets.command_process")


def _loaded(pytester: pytest.Pytester) -> set[str]:
    return set(json.loads((pytester.path / "loaded.json").read_text(encoding="utf-8")))


def _suite(pytester: pytest.Pytester, **fields: object) -> None:
    jb_suite(pytester.path, "jb", [jb(True, True, case_id="a"), jb(False, False, case_id="b")], **fields)
    pytester.makeconftest(CONFTEST)


def test_a_run_without_baseline_or_gates_reads_no_baseline(pytester: pytest.Pytester) -> None:
    _suite(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-json", "first.json")
    result.assert_outcomes(passed=2)
    loaded = _loaded(pytester)
    assert "pytest_evals.regression.regression_plugin" in loaded  # the check saw the plugins
    assert not loaded & set(BASELINE_READER)
    assert not loaded & set(TARGET_RUNNERS)
    # Against that run as a baseline, the reader is loaded and the suite is compared.
    again = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-baseline", "first.json",
                                          "--evals-json", "second.json")
    again.assert_outcomes(passed=2)
    assert set(BASELINE_READER) <= _loaded(pytester)
    summary = json.loads((pytester.path / "second.json").read_text(encoding="utf-8"))
    (suite,) = summary["suites"]
    assert suite["baseline"]["path"].endswith("first.json")


def test_a_regression_gate_without_baseline_is_still_checked(pytester: pytest.Pytester) -> None:
    _suite(pytester, thresholds={"accuracy": {"max_drop": 0.05}})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-baseline-required")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*no baseline given (--evals-baseline)*"])
    assert set(BASELINE_READER) <= _loaded(pytester)


TARGET = """
def answer(case):
    return {"actual_outcome": case["expected_outcome"]}
"""


@pytest.mark.parametrize("kind", ["callable", "command"])
def test_a_generating_suite_loads_its_target_runner(pytester: pytest.Pytester, kind: str) -> None:
    pytester.makepyfile(my_target=TARGET)
    write_jsonl(pytester.path, "data/gen.jsonl", [
        {"id": "a", "question": "q a", "expected_outcome": True},
        {"id": "b", "question": "q b", "expected_outcome": False},
    ])
    command = [sys.executable, "-c", "import json, sys; c = json.load(sys.stdin); "
               "print(json.dumps({'actual_outcome': c['expected_outcome']}))"]
    target = "my_target:answer" if kind == "callable" else {"command": command}
    write_suite(pytester.path, "gen.eval.yaml", task="jailbreak_guardrails", input_path="data/gen.jsonl",
                generate=True, target=target)
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    wanted = TARGET_RUNNERS[0] if kind == "callable" else TARGET_RUNNERS[1]
    assert wanted in _loaded(pytester)


PROBE_IMPORTS = """
import json, sys
from pytest_evals.llm import endpoint_probe
hosted = endpoint_probe.is_hosted("https://api.openai.com/v1")
before = sorted(m for m in ("urllib.request", "http.client") if m in sys.modules)
# A port nothing listens on: the probe's own error path (http.client's exceptions).
info = endpoint_probe.probe_endpoint_sync("http://127.0.0.1:9/v1", timeout=2)
print(json.dumps([hosted, before, info.reachable, info.error or ""]))
"""


def test_the_endpoint_probe_imports_its_http_stack_when_it_probes() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE_IMPORTS], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    hosted, before, reachable, error = json.loads(proc.stdout)
    assert hosted is True
    assert before == []
    assert reachable is False
    assert error.startswith("connection error: ConnectionRefusedError")
