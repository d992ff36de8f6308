"""HarpIA inputs and ``pytest-evals viz`` inputs are read with bounds (issue 30, attack 10).

A FIFO is refused instead of hanging the run, ``/dev/zero`` instead of filling memory, a
file over ``evals_max_json_file_bytes`` and JSON nested deeper than
``evals_max_json_depth`` are refused before parsing; each is one problem naming the
file, and everything else still runs.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from pytest_evals.cli.main import main
from pytest_evals.hardening import input_limits
from tests.core.core_helpers import write_suite
from tests.redteam.samples import attack_dict

DEEP = b'{"instances": ' + b"[" * 50_000 + b"]" * 50_000 + b', "metrics": []}'
INSTANCES = [
    {"id": "a1", "input": "x", "expected-output": ["The cat sleeps."], "actual-output": "The cat sleeps."},
    {"id": "a2", "input": "y", "expected-output": ["It rains."], "actual-output": "It rained."},
]
METRICS = [{"id": "edit_distance"}]


def _harpia_suites(root: Path) -> None:
    (root / "good.harpia.json").write_text(json.dumps({"instances": INSTANCES, "metrics": METRICS}), encoding="utf-8")
    (root / "in").mkdir()
    os.mkfifo(root / "in" / "pipe.json")
    (root / "in" / "deep.json").write_bytes(DEEP)
    big = {"instances": [{**INSTANCES[0], "id": f"i{i}", "input": "z" * 1000} for i in range(300)], "metrics": METRICS}
    (root / "in" / "big.json").write_text(json.dumps(big), encoding="utf-8")
    for name, path in (("fifo", "in/pipe.json"), ("zero", "/dev/zero"), ("deep", "in/deep.json"), ("big", "in/big.json")):
        write_suite(root, f"{name}.eval.yaml", task="harpia", input_path=path)
    (root / "pytest.ini").write_text("[pytest]\nevals_max_json_file_bytes = 200000\n", encoding="utf-8")


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_hostile_harpia_inputs_are_one_suite_error_each(pytester: pytest.Pytester, xdist: bool) -> None:
    _harpia_suites(pytester.path)
    args = ["-p", "no:cacheprovider", "--evals-json", "s.json"] + (["-n", "2"] if xdist else [])
    started = time.monotonic()
    result = pytester.runpytest_subprocess(*args, timeout=120)
    assert time.monotonic() - started < 100
    result.assert_outcomes(passed=2, errors=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    for pattern in (
        "*in/pipe.json: is a FIFO (named pipe); expected a regular JSON file (a HarpIA input file)*",
        "*/dev/zero: is a character device; expected a regular JSON file (a HarpIA input file)*",
        "*in/deep.json: JSON nested 50001 levels deep, over the limit of 128 (ini evals_max_json_depth)*",
        "*in/big.json: is * bytes, over the limit of 200000 (ini evals_max_json_file_bytes)*",
    ):
        result.stdout.fnmatch_lines([pattern])
    assert json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))["exit_status"] == 1


def _prompt_file(seed: Path, name: str) -> None:
    from pytest_evals import save_system_prompt_stats

    save_system_prompt_stats(seed.parent, 0, name, [attack_dict(name, "u", [(0.5, 1.0, 6, -1.0)])],
                             meta={"step": 0, "operation": "init"})


def test_viz_skips_hostile_files_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    seed = tmp_path / "data" / "evo" / "run" / "seed_0"
    seed.mkdir(parents=True)
    _prompt_file(seed, "a good system prompt")
    os.mkfifo(seed / "pipe.json")
    (seed / "zero.json").symlink_to("/dev/zero")
    (seed / "deep.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    (seed / "big.json").write_bytes(b'{"system_prompt": "' + b"x" * 300_000 + b'"}')
    monkeypatch.setattr(input_limits, "_limits", {**input_limits._limits, "max_file_bytes": 200_000})
    started = time.monotonic()
    status = main(["viz", str(tmp_path / "data"), "-o", str(tmp_path / "viz.html")])
    assert time.monotonic() - started < 30
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "1 system prompt(s), 4 file(s) skipped" in out
    assert f"skipped {seed / 'pipe.json'}: is a FIFO (named pipe); expected a regular JSON file" in err
    assert f"skipped {seed / 'zero.json'}: is a character device; expected a regular JSON file" in err
    assert f"skipped {seed / 'deep.json'}: JSON nested 100000 levels deep, over the limit of 128" in err
    assert f"skipped {seed / 'big.json'}: is 300021 bytes, over the limit of 200000" in err
