"""The red-team run store is written by the controller, through ``pytest_evals_write_outputs``.

Cases compute; only the controller writes, once the verdict is decided, with the
run's one atomic writer. So a plain run and ``-n 2`` write byte-identical files
(baseline included: under xdist it reaches the controller from the worker that
computed it), a file that cannot be written is reported without losing the others,
and known secrets never reach the files.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_evals.families.redteam.convert import hash_system_prompt
from pytest_evals.families.redteam.loader import load_run_dir
from pytest_evals.testing.fake_openai import FakeOpenAI
from tests.redteam import rt_fixtures as fx
from tests.redteam.test_task import BASELINE, GIVEN_STATS, USERS, responder, suite, write_cases


@pytest.fixture
def fake_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=responder) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-redteam-store")
        yield fake


def store_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.json"))}


def test_plain_and_xdist_runs_write_the_same_store_with_the_baseline(
    pytester: pytest.Pytester, fake_server: FakeOpenAI
) -> None:
    cases = write_cases(pytester)
    suite(pytester, BASELINE)
    out = pytester.path / "out"
    written = {}
    for workers in (0, 2):
        if out.exists():
            shutil.rmtree(out)
        args = ["-p", "no:cacheprovider", "--evals-json", "summary.json"] + (["-n", str(workers)] if workers else [])
        result = pytester.runpytest_subprocess(*args)
        run_path = out / "one_turn" / "base"
        result.stdout.fnmatch_lines([f"red-team run: {run_path}"])
        summary = json.loads((pytester.path / "summary.json").read_text(encoding="utf-8"))
        assert summary["redteam"] == {"run_paths": [str(run_path)], "errors": []}
        written[workers] = store_files(out)
    assert written[0] == written[2]
    # every attack once, in case order, and the baseline prompt with its statistics
    run = load_run_dir(pytester.path / "out" / "one_turn" / "base")
    assert not run.issues
    seeds = {s.seed_id: s for s in run.seeds}
    [base] = seeds["base"].prompts
    assert base.stats.meta.operation == "baseline" and len(base.stats.attacks) == len(USERS)
    by_prompt = {p.stats.system_prompt: p.stats for sid in ("0", "1") for p in seeds[sid].prompts}
    for system in {c["system_prompt"] for c in cases}:
        mine = [c for c in cases if c["system_prompt"] == system]
        assert [a.user for a in by_prompt[system].attacks] == [c["user_prompt"] for c in mine]
        # the file's meta is the last case's (as when each case merged its attack in turn)
        assert by_prompt[system].meta.operation == mine[-1]["operation"] and by_prompt[system].meta.step == mine[-1]["step"]


@pytest.mark.parametrize("workers", [0, 2])
def test_an_unwritable_file_is_reported_and_the_others_are_written(
    pytester: pytest.Pytester, fake_server: FakeOpenAI, workers: int
) -> None:
    cases = write_cases(pytester, generate=False)
    # a reply that quotes the API key: the store masks it as every output file does
    cases[0]["responses"] = [f"my key is sk-test-redteam-store, {r}" for r in cases[0]["responses"]]
    (pytester.path / "attacks.jsonl").write_text("\n".join(json.dumps(c) for c in cases) + "\n", encoding="utf-8")
    suite(pytester, GIVEN_STATS.replace("n_responses: 3", "generate: false"))
    run_path = pytester.path / "out" / "bon_iter" / "given"
    broken = run_path / "seed_1" / f"{hash_system_prompt('Give long answers.')}.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json", encoding="utf-8")
    args = ["-p", "no:cacheprovider", "--evals-json", "summary.json"] + (["-n", str(workers)] if workers else [])
    result = pytester.runpytest_subprocess(*args)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == len(cases)  # the cases are not affected
    result.stdout.fnmatch_lines([f"ERROR red-team run not written: could not write the run under {run_path} (seed 1): {broken}: cannot merge into an unreadable file*"])
    summary = json.loads((pytester.path / "summary.json").read_text(encoding="utf-8"))
    assert summary["redteam"]["run_paths"] == [str(run_path)] and len(summary["redteam"]["errors"]) == 1
    assert broken.read_text(encoding="utf-8") == "{not json"  # never overwritten
    seed0 = sorted((run_path / "seed_0").glob("*.json"))
    assert len(seed0) == 2  # the other system prompts' files are written
    text = "".join(p.read_text(encoding="utf-8") for p in seed0)
    assert "sk-test-redteam-store" not in text and "my key is ***" in text
    assert not list(run_path.rglob("*.tmp"))


def test_a_seed_id_that_is_no_directory_name_is_a_case_error(pytester: pytest.Pytester, fake_server: FakeOpenAI) -> None:
    pytester.makepyfile(rt_targets=Path(fx.__file__).read_text(encoding="utf-8"))
    lines = [
        {"id": "ok", "system_prompt": "s", "user_prompt": "u", "responses": ["Answer to u"]},
        {"id": "escape", "system_prompt": "s", "user_prompt": "u2", "responses": ["x"], "seed_id": "../x"},
    ]
    (pytester.path / "attacks.jsonl").write_text("\n".join(json.dumps(c) for c in lines) + "\n", encoding="utf-8")
    suite(pytester, GIVEN_STATS.replace("n_responses: 3", "generate: false"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*attacks.jsonl:2: field 'seed_id': seed id '../x' cannot be a directory name*"])
    assert not (pytester.path / "out" / "bon_iter" / "x").exists()
