"""Output paths that name a device, a pipe or a folder are refused, never replaced (issue 30, 13)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_evals.output.artifacts import SpecialFileError, atomic_write

SUITE = "task: jailbreak_guardrails\ninput_path: q.jsonl\n"
CASE = '{"id": "a", "question": "q", "expected_outcome": true, "actual_outcome": true}\n'


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_evals_json_naming_a_fifo_is_a_usage_error(pytester: pytest.Pytester, xdist: bool) -> None:
    # A FIFO stands for any special file: as root the run used to replace /dev/null itself.
    fifo = pytester.path / "out.json"
    os.mkfifo(fifo)
    (pytester.path / "s.eval.yaml").write_text(SUITE, encoding="utf-8")
    (pytester.path / "q.jsonl").write_text(CASE, encoding="utf-8")
    result = pytester.runpytest_subprocess("--evals-json", str(fifo), *(["-n", "2"] if xdist else []))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--evals-json*out.json: is a device, pipe or socket, not a regular file*"])
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_folder_as_evals_json_is_a_usage_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "out").mkdir()
    result = pytester.runpytest_subprocess("--evals-json", "out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--evals-json out: is a folder, not a regular file*"])


def test_atomic_write_never_replaces_a_special_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(SpecialFileError, match="not a regular file"):
        atomic_write(fifo, "{}")
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    atomic_write(tmp_path / "plain.json", "{}")  # a regular path is written as before
    assert (tmp_path / "plain.json").read_text(encoding="utf-8") == "{}"
