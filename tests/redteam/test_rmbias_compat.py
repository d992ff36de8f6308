"""Files written the way rm-bias's own code writes them load without loss (issue 16).

The reference model of rm-bias (tests/redteam/rmbias_reference.py) writes twelve system
prompt files with what their code produces and the seed's text does not mention: null raw
scores from failed judge calls, the default ``meta={}``, partially missing normalized
scores and the same rater twice. Before issue 16 four of twelve such files were dropped.
"""

from __future__ import annotations

import copy
import inspect
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_evals import (
    adversariality,
    convert_attack_to_dict,
    load_run_dir,
    save_cluster_info,
    save_system_prompt_stats,
)
from pytest_evals.cli.main import main
from tests.redteam import rmbias_reference as ref

RM = ref.Rater("skywork-v2", "classifier")
JUDGE = ref.Rater("openai/gpt-5-nano", "lm_judge")
OPS = ("init", "mutate", "crossover")


def rated(i: int, rm_norm: float | None, judge_raw: float | None, judge_norm: float | None) -> ref.RatedResponse:
    rm_aux: dict[str, Any] = {} if rm_norm is None else {"normalized_score": rm_norm}
    judge_aux: dict[str, Any] = {"reasoning": f"reason {i}"}
    if judge_norm is not None:
        judge_aux["normalized_score"] = judge_norm
    return ref.RatedResponse(
        f"response {i}",
        [ref.Rating(0.5 + i / 10, RM, rm_aux), ref.Rating(judge_raw, JUDGE, judge_aux)],
    )


def attack(sp: str, k: int, responses: list[ref.RatedResponse]) -> ref.Attack:
    return ref.Attack(sp, f"user prompt {k}", responses, {"policy": "p-model"})


def prompts() -> list[tuple[str, list[ref.Attack], dict[str, Any] | None]]:
    """Twelve (system prompt, attacks, meta) as an rm-bias run makes them; meta None = their default."""
    out: list[tuple[str, list[ref.Attack], dict[str, Any] | None]] = []
    for i in range(6):  # ordinary files
        sp = f"System prompt {i}: answer with flattery."
        attacks = [attack(sp, k, [rated(r, 0.3 * (i - k + r), 4 + r, -0.2 * (k + r)) for r in range(3)]) for k in range(2)]
        out.append((sp, attacks, {"step": i // 2, "operation": OPS[i % 3]}))
    for i in (6, 7):  # a judge call failed: raw_score None, no normalized score on that response
        sp = f"System prompt {i}: use bullet points."
        responses = [rated(0, 1.0, 7, 0.5), rated(1, 2.0, None, None), rated(2, 0.0, 5, -1.5)]
        out.append((sp, [attack(sp, 0, responses)], {"step": 3, "operation": "mutate"}))
    for i in (8, 9):  # meta left to rm-bias's default {}
        sp = f"System prompt {i}: be terse."
        out.append((sp, [attack(sp, 0, [rated(0, 0.4 * i, 6, -0.1 * i)])], None))
    sp = "System prompt 10: the same rater twice."
    twice = ref.RatedResponse("twice", [ref.Rating(0.9, RM, {"normalized_score": 1.0}), ref.Rating(0.7, RM, {"normalized_score": 0.5})])
    out.append((sp, [attack(sp, 0, [twice])], {"step": 4, "operation": "crossover"}))
    sp = "System prompt 11: every judge call failed."
    out.append((sp, [attack(sp, 0, [rated(r, 0.5, None, None) for r in range(2)])], {"step": 4, "operation": "mutate"}))
    return out


def write_reference_run(run: Path) -> dict[str, dict[str, Any]]:
    """The run as rm-bias's helpers write it; returns file stem -> content."""
    files = {}
    for sp, attacks, meta in prompts():
        data = ref.prompt_file(sp, attacks, meta)
        path = ref.write_prompt_file(run / "seed_0", data)
        files[path.stem] = data
    return files


def same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)


def test_files_written_by_rm_bias_load_without_loss_and_means_equal_their_viewer(tmp_path: Path) -> None:
    run = tmp_path / "evo" / "theirs"
    files = write_reference_run(run)
    loaded = load_run_dir(run)
    assert loaded.issues == []
    records = {r.hash: r for r in loaded.seeds[0].prompts}
    assert sorted(records) == sorted(files) and len(records) == 12
    null_raw = 0
    for stem, data in files.items():
        record = records[stem]
        assert record.hash_ok
        want_mean, want_std = ref.viewer_prompt_stats(data)
        assert same(record.mean_score, want_mean), stem
        assert same(record.stdev_score, want_std), stem
        for got, attack_data in zip(record.adversarial_scores, data["attacks"], strict=True):
            assert same(got, ref.attack_score(attack_data)), stem
        # nothing lost: every rating is there, a null raw score stays null
        for model, attack_data in zip(record.stats.attacks, data["attacks"], strict=True):
            for resp, resp_data in zip(model.responses, attack_data["responses"], strict=True):
                assert [r.raw_score for r in resp.ratings] == [r["raw_score"] for r in resp_data["ratings"]]
                null_raw += sum(r.raw_score is None for r in resp.ratings)
    assert null_raw == 4
    by_sp = {r.stats.system_prompt: r for r in records.values()}
    assert by_sp["System prompt 8: be terse."].stats.meta.step is None  # meta={} kept as given
    # the same rater twice is scored, with that rater's mean on both sides (as theirs)
    assert by_sp["System prompt 10: the same rater twice."].mean_score == pytest.approx(adversariality(0.75, 0.75), abs=1e-15)
    # a failed judge call: the two present judge scores are averaged (as theirs)
    assert by_sp["System prompt 6: use bullet points."].mean_score == pytest.approx(adversariality(1.0, -0.5), abs=1e-15)
    # no score at all: N/A, although their helper wrote 0.0 into the file
    none = by_sp["System prompt 11: every judge call failed."]
    assert none.mean_score is None and none.file_mean == 0.0


def test_our_helpers_write_exactly_what_theirs_write(tmp_path: Path) -> None:
    for i, (sp, attacks, meta) in enumerate(prompts()):
        before = copy.deepcopy(attacks)
        if meta is None:
            h = save_system_prompt_stats(tmp_path, "ours", sp, attacks)
        else:
            h = save_system_prompt_stats(run_path=tmp_path, seed_id="ours", system_prompt=sp, attacks=attacks, meta=meta)
        assert h + ".json" == ref.file_name(sp)
        ours = json.loads((tmp_path / "seed_ours" / f"{h}.json").read_text(encoding="utf-8"))
        theirs = json.loads(json.dumps(ref.prompt_file(sp, attacks, meta)))
        assert ours == theirs, i
        assert attacks == before  # the caller's dataclasses are not modified


def test_convert_attack_to_dict_on_a_dataclass_with_a_null_raw_score() -> None:
    _sp, attacks, _meta = prompts()[6]
    out = convert_attack_to_dict(attacks[0])
    assert out == ref.attack_as_dict(attacks[0])
    assert out["responses"][1]["ratings"][1]["raw_score"] is None
    assert out["aux_info"]["adversarial_score"] == pytest.approx(adversariality(1.0, -0.5), abs=1e-15)
    assert "adversarial_score" not in attacks[0].aux_info
    # an attack dict is taken as already normalized and returned as it is
    as_dict = ref.attack_as_dict(attacks[0])
    assert convert_attack_to_dict(as_dict) is as_dict


def test_helper_signatures_and_defaults_are_rm_bias_s() -> None:
    assert list(inspect.signature(adversariality).parameters) == ["z_score_1", "z_score_2"]
    assert adversariality(z_score_1=2.0, z_score_2=-2.0) == 1.5
    params = inspect.signature(save_system_prompt_stats).parameters
    assert list(params) == ["run_path", "seed_id", "system_prompt", "attacks", "mean_score", "stdev_score", "meta"]
    assert list(params["attacks"].default) == [] and params["mean_score"].default is None
    assert params["stdev_score"].default is None and dict(params["meta"].default) == {}
    assert list(inspect.signature(save_cluster_info).parameters) == [
        "run_path", "seed_id", "summary", "train_batch_size", "sample_train_prompts",
    ]


def test_cluster_info_keeps_the_first_ten_sample_prompts(tmp_path: Path) -> None:
    assert save_cluster_info(tmp_path, 0, "cooking", 64, [f"q{i}" for i in range(30)]) is None
    data = json.loads((tmp_path / "seed_0" / "cluster_info.json").read_text(encoding="utf-8"))
    assert data == {"summary": "cooking", "train_batch_size": 64, "sample_train_prompts": [f"q{i}" for i in range(10)]}


def test_partial_scores_na_is_an_option_with_the_reason(tmp_path: Path) -> None:
    run = tmp_path / "evo" / "theirs"
    write_reference_run(run)
    strict = {r.stats.system_prompt: r for r in load_run_dir(run, partial="na").seeds[0].prompts}
    assert strict["System prompt 6: use bullet points."].mean_score is None
    assert strict["System prompt 10: the same rater twice."].mean_score is None
    assert strict["System prompt 0: answer with flattery."].mean_score is not None
    out = tmp_path / "viz.html"
    assert main(["viz", str(tmp_path), "-o", str(out), "--partial-scores", "na"]) == 0
    payload = read_payload(out)
    assert payload["partial"] == "na"
    why = {p["sp"]: p["attacks"][0]["advWhy"] for p in payload["runs"][0]["seeds"][0]["prompts"]}
    assert why["System prompt 6: use bullet points."] == (
        "response 2 has no normalized_score from openai/gpt-5-nano (partial scores 'na')"
    )
    assert "same rater" in why["System prompt 10: the same rater twice."]


def read_payload(path: Path) -> dict[str, Any]:
    match = re.search(r'id="viz-data">(.*?)</script>', path.read_text(encoding="utf-8"), re.DOTALL)
    assert match is not None
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def test_viz_shows_their_files_with_their_means_and_flags_a_misnamed_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "data" / "evo" / "theirs"
    files = write_reference_run(run)
    stem = next(iter(files))
    (run / "seed_0" / f"{stem}.json").rename(run / "seed_0" / "renamed.json")
    out = tmp_path / "viz.html"
    assert main(["viz", str(tmp_path / "data"), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "1 run(s), 12 system prompt(s), 0 file(s) skipped" in captured.out
    assert f"warning: {run / 'seed_0' / 'renamed.json'}: file name is not its system prompt's hash (expected {stem}.json)" in captured.err
    payload = read_payload(out)
    shown = {p["h"]: p for p in payload["runs"][0]["seeds"][0]["prompts"]}
    assert shown["renamed"]["hashOk"] is False and sum(not p["hashOk"] for p in shown.values()) == 1
    assert payload["runs"][0]["warnings"][0]["file"].endswith("renamed.json")
    assert payload["runs"][0]["nullRaw"] == 4
    for h, data in files.items():
        mean, std = ref.viewer_prompt_stats(data)
        p = shown["renamed" if h == stem else h]
        assert same(p["mean"], mean) and same(p["std"], std)


def test_viz_with_no_run_exits_non_zero_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data" / "evo").mkdir(parents=True)
    out = tmp_path / "viz.html"
    assert main(["viz", str(tmp_path / "data"), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"no runs found under {tmp_path / 'data'}" in err and "nothing written" in err
    assert not out.exists()
