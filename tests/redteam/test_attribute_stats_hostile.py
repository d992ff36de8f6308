"""Hostile input to the rm-bias ``final_stats`` reader, ``attribute-stats`` and ``viz``:
numbers beyond float range, infinite win rates and scores, ``--seed`` filters that match nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evals.cli.main import main

pytestmark = pytest.mark.filterwarnings("error")


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


def test_huge_integer_is_one_line_naming_file_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_seed(tmp_path / "run", HUGE)
    assert main(["attribute-stats", str(path.parent.parent)]) == 1
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines == [f"pytest-evals attribute-stats: {path}: field "
                     "\"[0].rollouts['p'][0].student_score.score\": number out of range: "
                     "an integer beyond the range of a float"]
    assert "Traceback" not in captured.err


def test_huge_integer_win_rate_and_raw_score_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = str(10 ** 400)
    write_seed(tmp_path / "a", '[{"attribute": "x", "student_winrate": ' + big + ', "teacher_winrate": null, "meta": {}, "rollouts": {}}]')
    write_seed(tmp_path / "b", '[{"attribute": "x", "student_winrate": 0.5, "teacher_winrate": -' + big + ', "meta": {}, "rollouts": {}}]')
    raw = json.loads(GOOD)
    raw[0]["rollouts"]["p"][0]["student_score"]["raw_score"] = 10 ** 400
    write_seed(tmp_path / "c", json.dumps(raw))
    for run, field in (("a", "[0].student_winrate"), ("b", "[0].teacher_winrate"),
                       ("c", "[0].rollouts['p'][0].student_score.raw_score")):
        assert main(["attribute-stats", str(tmp_path / run), "--json"]) == 1
        captured = capsys.readouterr()
        errors = json.loads(captured.out)["errors"]
        assert [e["field"] for e in errors] == [field] and "out of range" in errors[0]["message"]


def test_huge_integer_viz_page_names_the_bad_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_seed(data / "good", GOOD)
    write_seed(data / "bad", HUGE)
    out = tmp_path / "viz.html"
    main(["viz", str(data), "-o", str(out)])
    html = out.read_text(encoding="utf-8")
    assert "Uses bullet points" in html
    assert "out of range" in html


@pytest.mark.parametrize("token", ["Infinity", "-Infinity"])
@pytest.mark.parametrize("field", ["student_winrate", "teacher_winrate"])
def test_infinite_win_rate_is_a_bad_field(tmp_path: Path, capsys: pytest.CaptureFixture[str], token: str, field: str) -> None:
    item = {"attribute": "inf", "student_winrate": 0.5, "teacher_winrate": 0.5, "meta": {},
            "rollouts": {"p": [rollout(1)]}}
    text = json.dumps([item]).replace(f'"{field}": 0.5', f'"{field}": {token}')
    path = write_seed(tmp_path / "run", text)
    write_seed(tmp_path / "good", GOOD)
    assert main(["attribute-stats", str(path), "--json"]) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["files"] == []
    assert report["errors"] == [{"file": str(path), "field": f"[0].{field}",
                                 "message": f"expected a finite number, NaN or null, got {float(token)!r}"}]
    # the table form names it on stderr too, and a good file still lists
    assert main(["attribute-stats", str(path)]) == 1
    assert f"field '[0].{field}'" in capsys.readouterr().err
    assert main(["attribute-stats", str(tmp_path / "good")]) == 0


def test_infinite_score_is_a_bad_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = GOOD.replace('"score": 1,', '"score": -Infinity,')
    assert "-Infinity" in text
    write_seed(tmp_path / "run", text)
    assert main(["attribute-stats", str(tmp_path / "run")]) == 1
    assert "[0].rollouts['p'][0].student_score.score" in capsys.readouterr().err


def test_nan_win_rate_is_still_not_available(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # their json.dump writes NaN for the mean over a NaN score: missing, not bad
    write_seed(tmp_path / "run", GOOD.replace('"student_winrate": 0.5', '"student_winrate": NaN'))
    assert main(["attribute-stats", str(tmp_path / "run"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["errors"] == [] and report["files"][0]["attributes"][0]["student_winrate"] is None


def write_seeds(run: Path, *seeds: str) -> None:
    folder = run / "final_stats"
    folder.mkdir(parents=True)
    for seed in seeds:
        (folder / f"seed_{seed}.json").write_text(GOOD, encoding="utf-8")


def test_seed_filter_matching_nothing_lists_the_seeds_present(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    write_seeds(tmp_path / "run", "10", "2")
    assert main(["attribute-stats", str(tmp_path / "run"), "--seed", "5", "--seed", "7"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"pytest-evals attribute-stats: --seed 5, 7 matches none of the final_stats/seed_<i>.json files "
        f"under {tmp_path / 'run'} (seeds present: 2, 10)"]
    assert "no final_stats" not in captured.err


def test_seed_filter_counts_bad_files_as_present(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_seeds(tmp_path / "run", "0")
    (tmp_path / "run" / "final_stats" / "seed_1.json").write_text("{broken", encoding="utf-8")
    assert main(["attribute-stats", str(tmp_path / "run"), "--seed", "3"]) == 1
    err = capsys.readouterr().err
    assert "(seeds present: 0, 1)" in err and "broken" not in err and "invalid JSON" not in err
    # the bad file selected by the filter is reported, the good one is left out
    assert main(["attribute-stats", str(tmp_path / "run"), "--seed", "1"]) == 1
    captured = capsys.readouterr()
    assert "seed_1.json" in captured.err and "invalid JSON" in captured.err and captured.out == ""


def test_seed_filter_selects_by_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_seeds(tmp_path / "run", "0", "03")
    assert main(["attribute-stats", str(tmp_path / "run"), "--seed", "3", "--json"]) == 0
    assert [f["seed"] for f in json.loads(capsys.readouterr().out)["files"]] == ["03"]


def test_no_final_stats_without_filter_is_still_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["attribute-stats", str(tmp_path / "empty"), "--seed", "1"]) == 1
    assert "no final_stats/seed_<i>.json under" in capsys.readouterr().err


@pytest.mark.parametrize("seed", ["nope", "1.5", "-1", "", "٣"])
def test_non_integer_seed_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: str) -> None:
    write_seeds(tmp_path / "run", "0")
    with pytest.raises(SystemExit) as exc:
        main(["attribute-stats", str(tmp_path / "run"), f"--seed={seed}"])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "usage:" in captured.err and "--seed" in captured.err and f"got {seed!r}" in captured.err


def test_scores_near_float_limit_are_not_available_without_warnings(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # 1.7e308 - (-1.7e308) overflows in the quartiles: their numpy gives inf/NaN with a
    # RuntimeWarning; ours gives N/A and no warning (this test module turns warnings into errors).
    items = [{"attribute": "big", "student_winrate": 1e308, "teacher_winrate": None, "meta": {},
              "rollouts": {"p": [rollout(1e308), rollout(1.7e308), rollout(-1.7e308)]}}]
    write_seed(tmp_path / "run", json.dumps(items))
    assert main(["attribute-stats", str(tmp_path / "run")]) == 0
    row = capsys.readouterr().out.splitlines()[2].split()
    assert row[:5] == ["1", "1e+308", "N/A*", "N/A", "N/A"]
    assert main(["attribute-stats", str(tmp_path / "run"), "--json"]) == 0
    attr = json.loads(capsys.readouterr().out)["files"][0]["attributes"][0]
    assert attr["student_winrate"] == 1e308 and attr["student_recomputed"] is None
