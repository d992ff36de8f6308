"""A suite's ``input_path`` no file can have is that suite's ERROR, never a collection
error that interrupts every suite (issue 30, attack 3).

One run holds a healthy suite beside suites whose ``input_path`` is a symlink loop,
``~nouser/...``, a 5,000-character name, a NUL byte, a folder and a device: each is one
ERROR naming its suite file and the field, the healthy suite runs and passes, and the
exit status is 1 (pytest's "Interrupted: N errors during collection" was exit 2).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

CASE = '{"id": "a", "question": "q", "expected_outcome": true, "actual_outcome": true}\n'

#: suite file stem -> (input_path as YAML text, what its error says after the field)
BAD_PATHS = {
    "loop": ("loop1/x.jsonl", "Too many levels of symbolic links"),
    "nouser": ("~nouser-h1-issue30/x.jsonl", "cannot expand '~'"),
    "long": ("a" * 5000 + ".jsonl", "File name too long"),
    "nul": ('"a\\0b.jsonl"', "embedded null byte"),
    "folder": ("data", "is a directory"),
    "device": ("/dev/zero", "is a character device"),
}


def build(root: Path) -> None:
    (root / "data").mkdir()
    (root / "data" / "q.jsonl").write_text(CASE, encoding="utf-8")
    (root / "good.eval.yaml").write_text("task: jailbreak_guardrails\ninput_path: data/q.jsonl\n", encoding="utf-8")
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    for stem, (value, _) in BAD_PATHS.items():
        (root / f"{stem}.eval.yaml").write_text(f"task: jailbreak_guardrails\ninput_path: {value}\n", encoding="utf-8")


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_unusable_input_paths_are_one_suite_error_each(pytester: pytest.Pytester, xdist: bool) -> None:
    build(pytester.path)
    summary = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("--evals-json", str(summary), *(["-n", "2"] if xdist else []))
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert "during collection" not in out
    assert "Traceback" not in out
    result.assert_outcomes(passed=1, errors=len(BAD_PATHS))
    doc = json.loads(summary.read_text(encoding="utf-8"))
    suites = {s["suite"]: s for s in doc["suites"]}
    assert suites["good.eval.yaml"]["passed"] is True
    assert suites["good.eval.yaml"]["cases"]["passed"] == 1
    for stem, (_, reason) in BAD_PATHS.items():
        entry = suites[f"{stem}.eval.yaml"]
        assert entry["passed"] is False
        problems = " ".join(str(r) for r in entry.get("reasons") or [])
        # the suite file and the field are named, then why the path is unusable
        assert f"{stem}.eval.yaml: field 'input_path'" in problems, (stem, problems)
        assert reason in problems, (stem, problems)
    # the 5,000-character name is cut in the message, not printed whole
    assert "a" * 1000 not in out
    assert "(5006 characters)" in out
