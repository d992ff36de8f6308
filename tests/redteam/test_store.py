"""Writing runs: file names, computed statistics, atomic and concurrent-safe writes."""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import multiprocessing
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_evals import (
    convert_attack_to_dict,
    hash_system_prompt,
    save_cluster_info,
    save_population_state,
    save_system_prompt_stats,
)
from pytest_evals.families.redteam import store
from pytest_evals.families.redteam.scoring import adversariality
from pytest_evals.families.redteam.store import atomic_write_json, merge_system_prompt_attacks
from tests.redteam.samples import attack_dict

META = {"step": 2, "operation": "mutate"}


def test_hash_is_md5_of_the_stripped_prompt() -> None:
    assert hash_system_prompt("  Be brief.\n") == hashlib.md5(b"Be brief.").hexdigest()
    assert hash_system_prompt("Réponds en français") == hashlib.md5("Réponds en français".encode()).hexdigest()


def test_save_writes_one_utf8_indented_file_named_by_the_hash(tmp_path: Path) -> None:
    prompt = "Réponds toujours en français ✓"
    a = attack_dict(prompt, "Bonjour ?", [(0.5, 1.0, 6, -1.0)])
    h = save_system_prompt_stats(tmp_path, 3, prompt, [a], meta=META)
    path = tmp_path / "seed_3" / f"{h}.json"
    assert h == hash_system_prompt(prompt)
    raw = path.read_bytes()
    assert "français ✓".encode() in raw  # UTF-8, not \\u escapes
    assert raw.startswith(b'{\n  "system_prompt": ')  # indent 2
    data = json.loads(raw)
    assert data["meta"] == META
    # rm-bias writes attack dicts as given (no adversarial_score inserted) and the mean from them
    assert data["attacks"] == [a]
    assert data["mean_score"] == pytest.approx(adversariality(1.0, -1.0)) and data["stdev_score"] == 0.0
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary files left


def test_mean_and_stdev_are_computed_from_the_attacks_skipping_na(tmp_path: Path) -> None:
    attacks = [
        attack_dict("p", "u1", [(0.5, 1.0, 6, -1.0), (0.4, 0.0, 5, 0.0)]),  # z1 = 0.5, z2 = -0.5
        attack_dict("p", "u2", [(0.5, 2.0, 6, 1.0)]),
        attack_dict("p", "u3", [(0.5, 2.0, 6, None)]),  # N/A: judge has no normalized score
    ]
    h = save_system_prompt_stats(tmp_path, 0, "p", attacks, meta=META)
    data = json.loads((tmp_path / "seed_0" / f"{h}.json").read_text(encoding="utf-8"))
    scores = [adversariality(0.5, -0.5), adversariality(2.0, 1.0)]
    mean = sum(scores) / 2
    assert data["mean_score"] == pytest.approx(mean)
    assert data["stdev_score"] == pytest.approx(abs(scores[0] - scores[1]) / 2)  # population std of two values
    assert data["attacks"] == attacks  # dicts are written as given, as rm-bias does


def test_all_na_writes_zero_as_rm_bias_does_and_given_values_are_kept(tmp_path: Path) -> None:
    # Changed on purpose (issue 16): rm-bias's helper writes 0.0 / 0.0 when no attack has a
    # score (its viewer, and ours, recompute from the attacks and show N/A).
    na = [attack_dict("p", "u", [(0.5, None, 6, None)])]
    h = save_system_prompt_stats(tmp_path, 0, "p", na, meta=META)
    data = json.loads((tmp_path / "seed_0" / f"{h}.json").read_text(encoding="utf-8"))
    assert (data["mean_score"], data["stdev_score"]) == (0.0, 0.0)
    save_system_prompt_stats(tmp_path, 0, "p", na, mean_score=0.25, stdev_score=0.5, meta=META)
    data = json.loads((tmp_path / "seed_0" / f"{h}.json").read_text(encoding="utf-8"))
    assert (data["mean_score"], data["stdev_score"]) == (0.25, 0.5)


def test_meta_defaults_to_empty_as_in_rm_bias_and_is_type_checked(tmp_path: Path) -> None:
    # Changed on purpose (issue 16): rm-bias's save_system_prompt_stats defaults meta={}.
    h = save_system_prompt_stats(tmp_path, 0, "p")
    assert json.loads((tmp_path / "seed_0" / f"{h}.json").read_text(encoding="utf-8")) == {
        "system_prompt": "p", "meta": {}, "mean_score": 0.0, "stdev_score": 0.0, "attacks": [],
    }
    with pytest.raises(ValueError, match=r"'meta\.step'"):
        save_system_prompt_stats(tmp_path, 1, "p", [], meta={"step": "one"})
    assert not (tmp_path / "seed_1").exists()


@dataclass(frozen=True)
class _Rater:
    model_name: str
    rating_function_type: str


@dataclass(frozen=True)
class _Rating:
    raw_score: float
    rater: _Rater
    aux_info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Response:
    assistant: str
    ratings: list[_Rating]


@dataclass(frozen=True)
class _Attack:
    system: str
    user: str
    responses: list[_Response]
    aux_info: dict[str, Any] = field(default_factory=dict)


def test_convert_attack_accepts_runner_dataclasses() -> None:
    rm, judge = _Rater("rm", "classifier"), _Rater("judge", "lm_judge")
    attack = _Attack(
        "sys", "usr",
        [_Response("a", [_Rating(0.7, rm, {"normalized_score": 2.0}), _Rating(3, judge)])],
        {"cluster": 4},
    )
    out = convert_attack_to_dict(attack)
    assert out["responses"][0]["ratings"][1]["aux_info"] == {}  # always present
    assert out["aux_info"] == {"cluster": 4}  # the judge has no normalized score: no adversarial score
    scored = _Attack("sys", "usr", [_Response("a", [_Rating(0.7, rm, {"normalized_score": 2.0}), _Rating(3, judge, {"normalized_score": -2.0})])])
    out = convert_attack_to_dict(scored)
    assert out["aux_info"]["adversarial_score"] == pytest.approx(1.5)
    assert out["responses"][0]["ratings"][0]["rater"] == {"model_name": "rm", "rating_function_type": "classifier"}


def test_a_bad_attack_is_named_by_its_field(tmp_path: Path) -> None:
    bad = {"system": "s", "user": "u", "responses": [{"assistant": "a", "ratings": [{"raw_score": "high", "rater": {"model_name": "m", "rating_function_type": "x"}}]}]}
    # rm-bias's convert_attack_to_dict returns an attack dict unchanged ...
    assert convert_attack_to_dict(bad) is bad
    # ... but writing it names the field instead of leaving a file the reader must skip
    with pytest.raises(ValueError, match=r"attacks\[0\]: .*responses\[0\]\.ratings\[0\]\.raw_score"):
        save_system_prompt_stats(tmp_path, 0, "s", [bad])
    with pytest.raises(ValueError, match="_Rater has no attribute 'system'"):
        convert_attack_to_dict(_Rater("m", "x"))


def test_population_history_maps_step_to_hash_and_generation(tmp_path: Path) -> None:
    save_population_state(tmp_path, 1, 0, {"a": 0, "b": 0})
    save_population_state(tmp_path, 1, 10, {"a": 0, "c": 4})
    save_population_state(tmp_path, 1, 2, {"b": 1})
    save_population_state(tmp_path, 1, 2, {"c": 2})  # the same step again replaces it
    history = json.loads((tmp_path / "seed_1" / "population_history.json").read_text(encoding="utf-8"))
    h = hash_system_prompt
    assert history == {"0": {h("a"): 0, h("b"): 0}, "2": {h("c"): 2}, "10": {h("a"): 0, h("c"): 4}}
    assert list(history) == ["0", "2", "10"]  # numeric order


def test_an_unreadable_population_history_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "seed_0" / "population_history.json"
    path.parent.mkdir()
    path.write_text("{broken", encoding="utf-8")
    with pytest.raises(ValueError, match=r"population_history\.json"):
        save_population_state(tmp_path, 0, 1, {"a": 1})
    assert path.read_text(encoding="utf-8") == "{broken"


def test_cluster_info(tmp_path: Path) -> None:
    save_cluster_info(tmp_path, "x", "Questions about cooking", 32, ["boil an egg", "bake bread"])
    data = json.loads((tmp_path / "seed_x" / "cluster_info.json").read_text(encoding="utf-8"))
    assert data == {"summary": "Questions about cooking", "train_batch_size": 32, "sample_train_prompts": ["boil an egg", "bake bread"]}
    # rm-bias keeps the first 10 sample prompts
    save_cluster_info(tmp_path, "x", "s", 32, [f"q{i}" for i in range(25)])
    data = json.loads((tmp_path / "seed_x" / "cluster_info.json").read_text(encoding="utf-8"))
    assert data["sample_train_prompts"] == [f"q{i}" for i in range(10)]


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.json"
    atomic_write_json(path, {"version": 1})

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_json(path, {"version": 2, "big": "x" * 100_000})
    assert json.loads(path.read_text(encoding="utf-8")) == {"version": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_readers_never_see_a_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    versions = [{"v": i, "pad": str(i) * 200_000} for i in range(2)]
    atomic_write_json(path, versions[0])
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            atomic_write_json(path, versions[i % 2])
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        seen = set()
        for _ in range(150):
            seen.add(json.loads(path.read_text(encoding="utf-8"))["v"])  # raises on a torn read
    finally:
        stop.set()
        thread.join()
    assert seen <= {0, 1}


def _merge_worker(run_path: str, worker: int, count: int) -> None:
    for i in range(count):
        a = attack_dict("shared prompt", f"user {worker}-{i}", [(0.5, 1.0, 6, -1.0)])
        merge_system_prompt_attacks(run_path, 0, "shared prompt", [a], {"step": 0, "operation": "init"})


def test_concurrent_merges_from_processes_lose_nothing(tmp_path: Path) -> None:
    workers, count = 3, 8
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        for f in [pool.submit(_merge_worker, str(tmp_path), w, count) for w in range(workers)]:
            f.result()
    data = json.loads((tmp_path / "seed_0" / f"{hash_system_prompt('shared prompt')}.json").read_text(encoding="utf-8"))
    users = sorted(a["user"] for a in data["attacks"])
    assert users == sorted(f"user {w}-{i}" for w in range(workers) for i in range(count))
    assert data["mean_score"] == pytest.approx(adversariality(1.0, -1.0))


def test_merge_replaces_an_attack_with_the_same_system_and_user(tmp_path: Path) -> None:
    merge_system_prompt_attacks(tmp_path, 0, "p", [attack_dict("p", "u", [(0.5, 1.0, 6, -1.0)]), attack_dict("p", "v", [(0.5, 0.0, 6, 0.0)])], META)
    merge_system_prompt_attacks(tmp_path, 0, "p", [attack_dict("p", "u", [(0.5, 2.0, 6, -2.0)])], {"step": 3, "operation": "x"})
    data = json.loads((tmp_path / "seed_0" / f"{hash_system_prompt('p')}.json").read_text(encoding="utf-8"))
    assert [a["user"] for a in data["attacks"]] == ["u", "v"]
    assert data["attacks"][0]["aux_info"]["adversarial_score"] == pytest.approx(adversariality(2.0, -2.0))
    assert data["meta"] == {"step": 3, "operation": "x"}
    assert sorted(os.listdir(tmp_path / "seed_0")) == [".lock", f"{hash_system_prompt('p')}.json"]


@pytest.mark.parametrize("seed_id", ["../x", "a/b", "..", ""])
def test_a_seed_id_cannot_escape_the_run_directory(tmp_path: Path, seed_id: str) -> None:
    with pytest.raises(ValueError, match="cannot be a directory name"):
        save_system_prompt_stats(tmp_path / "run", seed_id, "p", [], meta=META)
    assert not (tmp_path / "x").exists()
