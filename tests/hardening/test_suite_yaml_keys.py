"""A key given twice in a suite file is a suite ERROR naming the key and line (issue 30,
attack 16): PyYAML keeps the last value, so a gate ``{min: 0.99}`` followed by
``{min: 0.1}`` would silently loosen it."""

from __future__ import annotations

import pytest

from tests.core.core_helpers import jb, write_jsonl

DUPLICATE_GATE = """task: jailbreak_guardrails
input_path: data/good.jsonl
thresholds:
  accuracy: {min: 0.99}
  accuracy: {min: 0.1}
"""
DUPLICATE_FIELD = """task: jailbreak_guardrails
input_path: data/good.jsonl
generate: false
thresholds: {accuracy: {min: 0.5, min: 0.1}}
"""
#: Keys merged in from an anchor may be overridden: that is what merging is for.
MERGED = """task: jailbreak_guardrails
input_path: data/good.jsonl
thresholds:
  precision: &base {min: 0.0, max: 1.0}
  accuracy:
    <<: *base
    min: 0.5
"""


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_duplicate_keys_are_a_suite_error(pytester: pytest.Pytester, xdist: bool) -> None:
    write_jsonl(pytester.path, "data/good.jsonl", [jb(True, True, case_id="a"), jb(False, False, case_id="b")])
    (pytester.path / "gate.eval.yaml").write_text(DUPLICATE_GATE, encoding="utf-8")
    (pytester.path / "field.eval.yaml").write_text(DUPLICATE_FIELD, encoding="utf-8")
    (pytester.path / "merged.eval.yaml").write_text(MERGED, encoding="utf-8")
    args = ["-p", "no:cacheprovider", "-rA"] + (["-n", "2"] if xdist else [])
    result = pytester.runpytest_subprocess(*args, timeout=60)
    result.assert_outcomes(passed=2, errors=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*gate.eval.yaml:5: duplicate key 'accuracy' (first given at line 4)*"])
    result.stdout.fnmatch_lines(["*field.eval.yaml:4: duplicate key 'min' (first given at line 4)*"])
