"""HarpIA's options carry the plugin's prefix; the old spellings are deprecated aliases.

``--evals-harpia-output`` / ``--evals-harpia-log`` and ini ``evals_harpia_case_deadline``
are the names; ``--harpia-output`` / ``--harpia-log`` / ``harpia_case_deadline`` still
work and warn once per run (not once per xdist worker).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import INSTANCES, read_log, read_output

ROUGE = [{"id": "Rouge", "enable": True, "parameters": {"rouge_types": ["rougeL"]}}]
WARNING = "*EvalsDeprecationWarning: option {old} is deprecated: use {new} (same meaning)*"


def test_the_prefixed_options_write_the_files_without_a_warning(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path]
) -> None:
    write_harpia(ROUGE)
    out, log = pytester.path / "out.json", pytester.path / "log.jsonl"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--evals-harpia-output={out}", f"--evals-harpia-log={log}")
    result.assert_outcomes(passed=len(INSTANCES))
    assert [o["id"] for o in read_output(out)] == ["rouge"]
    assert len(read_log(log)) == len(INSTANCES)
    assert "deprecated" not in result.stdout.str()
    help_text = pytester.runpytest("--help").stdout.str()
    assert "--evals-harpia-output=PATH" in help_text and "deprecated alias of --evals-harpia-output" in help_text


@pytest.mark.parametrize("workers", [0, 2])
def test_the_old_spellings_still_work_and_warn_once(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path], workers: int
) -> None:
    write_harpia(ROUGE)
    out, log = pytester.path / "out.json", pytester.path / "log.jsonl"
    pytester.makeini("[pytest]\nharpia_case_deadline = 30\n")
    args = ["-p", "no:cacheprovider", f"--harpia-output={out}", f"--harpia-log={log}"]
    result = pytester.runpytest_subprocess(*args, "-n", str(workers)) if workers else pytester.runpytest(*args)
    result.assert_outcomes(passed=len(INSTANCES))
    assert [o["id"] for o in read_output(out)] == ["rouge"]
    assert len(read_log(log)) == len(INSTANCES)
    text = result.stdout.str()
    result.stdout.fnmatch_lines([
        WARNING.format(old="--harpia-output", new="--evals-harpia-output"),
        WARNING.format(old="--harpia-log", new="--evals-harpia-log"),
        "*EvalsDeprecationWarning: ini key harpia_case_deadline is deprecated: use evals_harpia_case_deadline*",
    ])
    assert text.count("option --harpia-output is deprecated") == 1
    assert text.count("ini key harpia_case_deadline is deprecated") == 1


def test_the_new_spelling_wins_over_the_old_one(pytester: pytest.Pytester, write_harpia: Callable[..., Path]) -> None:
    write_harpia(ROUGE)
    new, old = pytester.path / "new.json", pytester.path / "old.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--harpia-output={old}", f"--evals-harpia-output={new}")
    result.assert_outcomes(passed=len(INSTANCES))
    assert new.exists() and not old.exists()


def test_the_old_ini_key_sets_the_deadline_and_the_new_one_wins(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path]
) -> None:
    from pytest_evals.families.harpia.option_aliases import getini
    from pytest_evals.families.harpia.plugin import CASE_DEADLINE

    pytester.makeini("[pytest]\nharpia_case_deadline = 7\n")
    assert float(getini(pytester.parseconfig(), CASE_DEADLINE)) == 7.0
    pytester.makeini("[pytest]\nharpia_case_deadline = 7\nevals_harpia_case_deadline = 3\n")
    assert float(getini(pytester.parseconfig(), CASE_DEADLINE)) == 3.0
