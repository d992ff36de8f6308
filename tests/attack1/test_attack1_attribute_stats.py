"""rm-bias final_stats files with hostile numbers (attack1 report, items R1-R2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evals.cli.main import main


def rollout(score: object) -> dict[str, object]:
    return {"rewritten_response": "r", "baseline_response": "b",
            "student_score": {"score": score, "model_name": "m"}}


def write_seed(run: Path, text: str) -> Path:
    path = run / "final_stats" / "seed_0.json"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return path


GOOD = json.dumps([{"attribute": "Uses bullet points", "student_winrate": 0.5, "teacher_winrate": 0.5,
                    "meta": {}, "rollouts": {"p": [rollout(1), rollout(0)]}}])
#: A score written as an integer literal beyond float range (json.loads gives an int).
HUGE = json.dumps([{"attribute": "huge", "student_winrate": 0.5, "teacher_winrate": 0.5,
                    "meta": {}, "rollouts": {"p": [rollout(10 ** 400)]}}])


@pytest.mark.defect("R1 (medium): an integer beyond float range in a final_stats file ends "
                    "`attribute-stats` and `viz` with an OverflowError traceback; the good "
                    "files of the same data directory are not listed / no page is written")
@pytest.mark.parametrize("command", ["attribute-stats", "viz"])
def test_huge_integer_is_a_bad_file_not_a_crash(tmp_path: Path, command: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    write_seed(data / "good", GOOD)
    write_seed(data / "bad", HUGE)
    args = [command, str(data)] + (["-o", str(tmp_path / "viz.html")] if command == "viz" else [])
    try:
        status = main(args)
    except OverflowError as exc:
        pytest.fail(f"{command} crashed: {exc!r}")
    captured = capsys.readouterr()
    if command == "attribute-stats":
        assert status == 1
        assert "Uses bullet points" in captured.out
        assert "bad/final_stats/seed_0.json" in captured.err and "score" in captured.err
    else:
        assert (tmp_path / "viz.html").exists()


@pytest.mark.defect("R2 (low): a stored win rate of Infinity is printed as N/A and written as "
                    "null in --json, as if it were missing, with no error naming the field")
def test_infinite_win_rate_is_reported_not_shown_as_missing(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    text = ('[{"attribute": "inf", "student_winrate": Infinity, "teacher_winrate": 0.5, "meta": {}, '
            '"rollouts": {"p": [{"rewritten_response": "r", "baseline_response": "b", '
            '"student_score": {"score": 1, "model_name": "m"}}]}}]')
    write_seed(tmp_path / "run", text)
    status = main(["attribute-stats", str(tmp_path / "run"), "--json"])
    captured = capsys.readouterr()
    assert status == 1, captured.out
    assert "student_winrate" in captured.err
