"""Command targets get the case on stdin or in a file named by the environment, never
in an environment variable itself (the kernel refuses one over 128 KiB: E2BIG)."""

from __future__ import annotations

import sys

import pytest

from tests.core.core_helpers import jb, write_jsonl, write_suite

#: Reads the case from stdin, or from $EVALS_CASE_FILE when asked to; checks both agree
#: and that no variable carries the case.
TARGET = """
import json, os, sys
from_stdin = json.load(sys.stdin)
with open(os.environ["EVALS_CASE_FILE"], encoding="utf-8") as fh:
    from_file = json.load(fh)
assert from_stdin == from_file, "stdin and the case file differ"
assert max(len(v) for v in os.environ.values()) < 100_000, "the case is in the environment"
q = from_file["question"]
print(json.dumps({"actual_outcome": q.startswith("bad")}))
"""


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_cases_of_a_mebibyte_reach_a_command_target(pytester: pytest.Pytester, xdist: bool) -> None:
    (pytester.path / "target.py").write_text(TARGET, encoding="utf-8")
    big = "x" * (1 << 20)
    write_jsonl(
        pytester.path,
        "data/big.jsonl",
        [
            jb(True, None, case_id="big-bad", question="bad " + big),
            jb(False, None, case_id="big-fine", question="fine " + big),
            jb(False, None, case_id="surrogate", question="fine \ud800 text"),
            jb(True, None, case_id="small", question="bad"),
        ],
    )
    write_suite(
        pytester.path,
        "cmd.eval.yaml",
        task="jailbreak_guardrails",
        generate=True,
        input_path="data/big.jsonl",
        target={"command": [sys.executable, "target.py"]},
    )
    args = ["-p", "no:cacheprovider"] + (["-n", "2"] if xdist else [])
    result = pytester.runpytest_subprocess(*args, timeout=120)
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.OK
