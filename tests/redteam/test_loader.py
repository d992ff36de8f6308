"""Reading runs back: the four runner directories, computed statistics, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evals import load_run_dir, save_population_state, save_system_prompt_stats
from pytest_evals.families.redteam.loader import find_runs, load_data_dir
from pytest_evals.families.redteam.schema import RUNNER_DIRS
from pytest_evals.families.redteam.scoring import adversariality
from tests.redteam.samples import attack_dict, seed_example

META = {"step": 1, "operation": "init"}


def write_run(run: Path, prompts: int = 2) -> list[str]:
    hashes = []
    for i in range(prompts):
        a = attack_dict(f"p{i}", "u", [(0.5, 1.0 + i, 6, -1.0)])
        hashes.append(save_system_prompt_stats(run, 0, f"p{i}", [a], meta={"step": i, "operation": "init"}))
    return hashes


def test_runs_are_found_under_all_four_runner_dirs(tmp_path: Path) -> None:
    for runner in RUNNER_DIRS:
        write_run(tmp_path / runner / f"run-{runner}", prompts=1)
    (tmp_path / "evo" / "not-a-run").mkdir()  # no seed_* inside
    (tmp_path / "other" / "x" / "seed_0").mkdir(parents=True)  # not a runner dir
    runs = load_data_dir(tmp_path)
    assert [r.run_id for r in runs] == [f"{r}/run-{r}" for r in RUNNER_DIRS]
    assert all(len(r.seeds) == 1 and len(r.seeds[0].prompts) == 1 and not r.issues for r in runs)
    # a runner directory or one run directory works too
    assert [p.name for _r, p in find_runs(tmp_path / "pair")] == ["run-pair"]
    assert [(r, p.name) for r, p in find_runs(tmp_path / "evo" / "run-evo")] == [("evo", "run-evo")]


def test_scores_are_computed_from_the_ratings_as_rm_bias_viewer_does(tmp_path: Path) -> None:
    # Changed on purpose (issue 16): rm-bias's viewer recomputes every attack's score from
    # its ratings and the prompt's mean/std from those; a stored value only fills a gap.
    run = tmp_path / "evo" / "r"
    hashes = write_run(run)
    seed_file = run / "seed_0" / "example.json"
    seed_file.write_text(json.dumps(seed_example()), encoding="utf-8")
    no_ratings = seed_example()
    no_ratings["attacks"][0]["responses"] = []
    (run / "seed_0" / "stored-only.json").write_text(json.dumps(no_ratings), encoding="utf-8")
    loaded = load_run_dir(run)
    records = {r.hash: r for r in loaded.seeds[0].prompts}
    example = records["example"]
    assert example.adversarial_scores == [adversariality(0.65, 0.40)]
    assert (example.mean_score, example.stdev_score) == (adversariality(0.65, 0.40), 0.0)
    assert example.file_mean is None and not example.hash_ok
    # Issue 28: rm-bias's viewer shows N/A for an attack without responses, stored score or not;
    # the stored score is shown only under --edge-rules ours.
    assert records["stored-only"].adversarial_scores == [None]
    assert records["stored-only"].mean_score is None
    ours = {r.hash: r for r in load_run_dir(run, edges="ours").seeds[0].prompts}
    assert ours["stored-only"].adversarial_scores == [-0.12]  # the ratings give none
    first = records[hashes[0]]
    assert first.mean_score == pytest.approx(adversariality(1.0, -1.0))
    assert first.file_mean == pytest.approx(first.mean_score, abs=1e-15) and first.hash_ok


def test_population_and_cluster_files_are_read(tmp_path: Path) -> None:
    run = tmp_path / "evo" / "r"
    write_run(run)
    save_population_state(run, 0, 0, {"p0": 0})
    save_population_state(run, 0, 1, {"p0": 0, "p1": 1})
    seed = load_run_dir(run).seeds[0]
    assert seed.population_history is not None
    assert [len(v) for v in seed.population_history.values()] == [1, 2]


TEXT_RAW = json.dumps({**seed_example(), "attacks": [{"system": "s", "user": "u", "responses": [{"assistant": "a", "ratings": [{"raw_score": "high", "rater": {"model_name": "m", "rating_function_type": "c"}}]}]}]}).encode()


@pytest.mark.parametrize(
    ("content", "field", "message", "edges"),
    [
        (b"{not json", None, "invalid JSON at line 1", "rm-bias"),
        (b"\xff\xfe garbage", None, "not UTF-8", "rm-bias"),
        (b"[1, 2]", None, "expected a JSON object", "rm-bias"),
        (json.dumps({"system_prompt": "x", "meta": {"step": "first", "operation": "init"}, "attacks": []}).encode(), "meta.step", "valid integer", "rm-bias"),
        # Under rm-bias's rules a text score is ignored (test_edge_rules); ours reads text as a number.
        (TEXT_RAW, "attacks[0].responses[0].ratings[0].raw_score", "valid number", "ours"),
    ],
)
def test_a_malformed_file_is_named_with_its_field_and_only_it_is_skipped(
    tmp_path: Path, content: bytes, field: str | None, message: str, edges: str
) -> None:
    run = tmp_path / "bon_iter" / "r"
    write_run(run)
    bad = run / "seed_0" / "broken.json"
    bad.write_bytes(content)
    loaded = load_run_dir(run, edges=edges)  # type: ignore[arg-type]
    assert len(loaded.seeds[0].prompts) == 2  # the good files still load
    [issue] = loaded.issues
    assert issue.path == bad
    assert issue.field == field
    assert message in issue.message
    assert str(bad) in str(issue) and (field is None or f"field '{field}'" in str(issue))


def test_a_malformed_population_history_is_skipped_alone(tmp_path: Path) -> None:
    run = tmp_path / "evo" / "r"
    write_run(run)
    (run / "seed_0" / "population_history.json").write_text(json.dumps({"3": {"abc": "first"}}), encoding="utf-8")
    loaded = load_run_dir(run)
    assert loaded.seeds[0].population_history is None
    assert len(loaded.seeds[0].prompts) == 2
    [issue] = loaded.issues
    assert issue.field == "3.abc" and "integer" in issue.message


def test_seeds_sort_naturally_and_ids_keep_their_text(tmp_path: Path) -> None:
    run = tmp_path / "evo" / "r"
    for seed in ("10", "2", "a"):
        save_system_prompt_stats(run, seed, "p", [], meta=META)
    assert [s.seed_id for s in load_run_dir(run).seeds] == ["2", "10", "a"]
