"""Hostile inputs end as clear errors naming file, line or field; the rest of the run goes on.

One run holds a healthy suite next to every attack of issue 14: a line nested 100,000
deep, a lone surrogate in a case field, an over-long line, input paths that are a FIFO,
a device and a directory, a billion-laughs YAML, NaN and infinite thresholds, and
booleans written as "true", 1 and 1.0. Each must be counted, named and leave exit
status 1 (never 2, a collection interruption, or 3, an internal error).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.core.core_helpers import jb, jb_suite, write_jsonl, write_suite

from .hostile import summary_is_strict_json

LAUGHS = "task: jailbreak_guardrails\ninput_path: data/good.jsonl\nthresholds:\n  a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"  {chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)


def build(root: Path) -> dict[str, int]:
    """Write the suites; returns the expected number of items per suite file."""
    good = [jb(True, True, case_id="a"), jb(False, False, case_id="b")]
    jb_suite(root, "good", good)
    deep = b'{"id": "deep", "question": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    write_jsonl(
        root,
        "data/hostile.jsonl",
        [
            jb(True, True, case_id="ok-1"),
            deep,
            b'{"id": "surrogate", "question": "bad \\ud800 text", "expected_outcome": true, "actual_outcome": true}',
            jb(False, False, case_id="long", question="x" * 400_000),
            jb(False, False, case_id="ok-2"),
        ],
    )
    write_suite(root, "hostile.eval.yaml", task="jailbreak_guardrails", input_path="data/hostile.jsonl")
    os.mkfifo(root / "data" / "pipe.jsonl")
    write_suite(root, "fifo.eval.yaml", task="jailbreak_guardrails", input_path="data/pipe.jsonl")
    write_suite(root, "device.eval.yaml", task="jailbreak_guardrails", input_path="/dev/zero")
    write_suite(root, "folder.eval.yaml", task="jailbreak_guardrails", input_path="data")
    (root / "laughs.eval.yaml").write_text(LAUGHS, encoding="utf-8")
    (root / "nan.eval.yaml").write_text(
        "task: jailbreak_guardrails\ninput_path: data/good.jsonl\nthresholds: {accuracy: .nan}\n", encoding="utf-8"
    )
    (root / "inf.eval.yaml").write_text(
        "task: jailbreak_guardrails\ninput_path: data/good.jsonl\nthresholds: {accuracy: {min: -.inf}}\n", encoding="utf-8"
    )
    for name, value in (("true_text", '"true"'), ("one", "1"), ("one_float", "1.0")):
        (root / f"bool_{name}.eval.yaml").write_text(
            f"task: jailbreak_guardrails\ninput_path: data/good.jsonl\ngenerate: {value}\n", encoding="utf-8"
        )
    (root / "runs_text.eval.yaml").write_text(
        'task: jailbreak_guardrails\ninput_path: data/good.jsonl\nn_runs: "2"\n', encoding="utf-8"
    )
    (root / "pytest.ini").write_text("[pytest]\nevals_max_line_bytes = 300000\n", encoding="utf-8")
    return {"good": 2, "hostile": 5}


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_every_attack_is_one_named_error_and_the_rest_runs(pytester: pytest.Pytester, xdist: bool) -> None:
    build(pytester.path)
    args = ["-p", "no:cacheprovider", "--evals-json", "out/summary.json", "--evals-report-dir", "out/runs",
            "--junitxml", "out/junit.xml", "--html", "out/report.html", "-rA"]
    if xdist:
        args += ["-n", "2"]
    started = time.monotonic()
    result = pytester.runpytest_subprocess(*args, timeout=120)
    elapsed = time.monotonic() - started
    out = result.stdout.str()

    # good: 2 passed; hostile: ok-1, surrogate, ok-2 passed, deep and long ERROR;
    # the 10 broken suites are one ERROR item each.
    result.assert_outcomes(passed=5, errors=12)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert "INTERNALERROR" not in out + result.stderr.str()
    assert elapsed < 60  # the YAML bomb and the FIFO take no time at all
    expectations = [
        "*data/hostile.jsonl:2: JSON nested 100001 levels deep, over the limit of 128 (ini evals_max_json_depth)*",
        "*data/hostile.jsonl:4: line is * bytes, over the limit of 300000 (ini evals_max_line_bytes)*",
        "*data/pipe.jsonl: is a FIFO (named pipe); input_path must be a regular JSONL file*",
        "*/dev/zero: is a character device; input_path must be a regular JSONL file*",
        "*data: is a directory, expected a JSONL file*",
        "*laughs.eval.yaml: the YAML expands to more than 200000 values*",
        "*field 'thresholds.accuracy': expected a finite number, got nan*",
        "*field 'thresholds.accuracy.min': expected a finite number, got -inf*",
        "*field 'generate': Input should be a valid boolean (true or false), got 'true' (str)*",
        "*field 'generate': Input should be a valid boolean (true or false), got 1 (int)*",
        "*field 'generate': Input should be a valid boolean (true or false), got 1.0 (float)*",
        "*field 'n_runs': expected a number, got '2' (str)*",
    ]
    for pattern in expectations:
        result.stdout.fnmatch_lines([pattern])

    # Every written file is strict JSON / encodable, and the surrogate case is in them.
    summary = summary_is_strict_json((pytester.path / "out/summary.json").read_text(encoding="utf-8"))
    assert summary["exit_status"] == 1
    [run] = list((pytester.path / "out/runs").iterdir())
    for name in ("summary.json", "manifest.json"):
        summary_is_strict_json((run / name).read_text(encoding="utf-8"))
    lines = (run / "results.jsonl").read_text(encoding="utf-8").splitlines()
    records = [summary_is_strict_json(line) for line in lines]
    assert len(records) == 17
    assert any(r["case_id"] == "surrogate" and r["status"] == "passed" for r in records)
    assert (pytester.path / "out/report.html").stat().st_size > 0
    assert "surrogate" in (pytester.path / "out/junit.xml").read_text(encoding="utf-8")
