"""rm-bias's current ``final_stats/seed_<i>.json`` attribute statistics load and display (issue 28).

The files are written as their ``Runner.save_attribute_stats`` writes them: a JSON list
(indent 4) of ``AttributeStats.to_dict()`` with rollouts passed through
``asdict_no_none`` (null fields left out, failed rollouts as ``null``), ordered by student
win rate. The expected win rates are recomputed here independently (pure Python quartiles).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.cli.main import main
from pytest_evals.families.redteam.loader import find_runs, load_run_dir
from pytest_evals.families.redteam.viewdata import build_payload
from tests.redteam import viewer_page as page


def rollout(student: float | None, teacher: float | None, i: int) -> dict[str, Any]:
    """asdict_no_none(Rollout(...)): keys whose value is None are absent."""
    out: dict[str, Any] = {
        "rewritten_response": f"rewritten {i}",
        "baseline_response": f"baseline {i}",
        "student_score": {"model_name": "skywork-v2", **({"score": student, "raw_score": student + 0.5} if student is not None else {})},
        "policy_model": "llama-3.1-8b",
    }
    if teacher is not None:
        out["teacher_score"] = {"score": teacher, "reasoning": f"because {i}", "model_name": "claude"}
    return out


def quartile(values: list[float], q: float) -> float:
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def their_winrate(scores: list[float]) -> float | None:
    if not scores:
        return None
    if all(any(abs(s - t) <= 1e-6 for t in (1, 0, -1)) for s in scores):
        return sum(scores) / len(scores)
    q1, q3 = quartile(scores, 0.25), quartile(scores, 0.75)
    kept = [s for s in scores if q1 - 1.5 * (q3 - q1) <= s <= q3 + 1.5 * (q3 - q1)]
    return sum(kept) / len(kept)


def attribute(name: str, students: list[float | None], teachers: list[float | None], step: int) -> dict[str, Any]:
    rollouts: dict[str, list[Any]] = {}
    for i, (s, t) in enumerate(zip(students, teachers, strict=True)):
        rollouts.setdefault(f"user prompt {i % 3}", []).append(rollout(s, t, i))
    rollouts.setdefault("user prompt failed", []).append(None)
    sw = their_winrate([s for s in students if s is not None])
    tw = their_winrate([t for t in teachers if t is not None])
    return {"attribute": name, "student_winrate": sw, "teacher_winrate": tw, "meta": {"time_step": step, "parent": None}, "rollouts": rollouts}


def seed_file() -> list[dict[str, Any]]:
    attrs = [
        # real-valued reward differences with an outlier (dropped by their Tukey fences)
        attribute("Uses bullet points", [0.4, 0.5, 0.45, 0.6, 9.0, 0.55], [1, 0, 1, None, -1, 1], 3),
        # ternary scores: a plain mean
        attribute("Praises the user", [1, 1, 0, -1, 1], [0, 0, None, None, None], 3),
        # no teacher scores at all: null win rate
        attribute("Ends with a question", [0.1, -0.2, 0.05], [None, None, None], 2),
        # no rollouts scored by the student either
        attribute("Says 'great question'", [None, None], [None, None], 1),
    ]
    # their order for a "plus" run: student win rate, highest first, None last
    return sorted(attrs, key=lambda a: a["student_winrate"] if a["student_winrate"] is not None else float("-inf"), reverse=True)


def write_final_stats(run: Path, seeds: dict[int, list[dict[str, Any]]]) -> None:
    folder = run / "final_stats"
    folder.mkdir(parents=True, exist_ok=True)
    for i, items in seeds.items():
        (folder / f"seed_{i}.json").write_text(json.dumps(items, indent=4), encoding="utf-8")


def test_final_stats_load_with_their_numbers_and_order(tmp_path: Path) -> None:
    run = tmp_path / "evo" / "head"
    items = seed_file()
    write_final_stats(run, {3: items, 10: items[:2]})
    assert [p for _, p in find_runs(tmp_path)] == [run]  # a run with only final_stats is a run
    loaded = load_run_dir(run)
    assert loaded.issues == [] and loaded.seeds == []
    assert [s.seed_id for s in loaded.attribute_stats] == ["3", "10"]
    seed = loaded.attribute_stats[0]
    assert [a.attribute for a in seed.attributes] == [a["attribute"] for a in items]
    for rec, want in zip(seed.attributes, items, strict=True):
        for got, stored in ((rec.student_winrate, want["student_winrate"]), (rec.teacher_winrate, want["teacher_winrate"])):
            assert (got is None and stored is None) or got == pytest.approx(stored, abs=1e-12)
        # recomputed from the rollouts by their rule, independently of the stored value
        assert (rec.student_computed is None) == (want["student_winrate"] is None)
        if want["student_winrate"] is not None:
            assert rec.student_computed == pytest.approx(want["student_winrate"], abs=1e-12)
    bullets = next(a for a in seed.attributes if a.attribute == "Uses bullet points")
    assert bullets.student_computed == pytest.approx(0.5)  # 9.0 is outside the fences
    assert bullets.teacher_computed == pytest.approx(0.4)  # ternary: plain mean of 1,0,1,-1,1

    payload = build_payload([loaded])
    [r] = payload["runs"]
    a0 = r["attrs"][0]
    assert a0["seed"] == "3" and a0["file"] == "final_stats/seed_3.json"
    first = a0["items"][0]
    assert first["attr"] == items[0]["attribute"] and first["prompts"] == 4 and first["nulls"] == 1
    assert first["n"] == sum(1 for v in items[0]["rollouts"].values() for x in v if x is not None)
    assert [x["ts"] for x in first["roll"]] == [x.get("teacher_score", {}).get("score") for v in items[0]["rollouts"].values() for x in v if x is not None]


def test_a_bad_final_stats_file_is_named_and_the_rest_load(tmp_path: Path) -> None:
    run = tmp_path / "evo" / "head"
    write_final_stats(run, {0: seed_file()})
    (run / "final_stats" / "seed_1.json").write_text(json.dumps([{"attribute": 3}]), encoding="utf-8")
    (run / "final_stats" / "seed_2.json").write_text("{broken", encoding="utf-8")
    loaded = load_run_dir(run)
    assert [s.seed_id for s in loaded.attribute_stats] == ["0"]
    issues = {i.path.name: i for i in loaded.issues}
    assert issues["seed_1.json"].field == "[0].attribute" and "string" in issues["seed_1.json"].message
    assert issues["seed_2.json"].field is None and "invalid JSON" in issues["seed_2.json"].message


def test_the_page_shows_the_attributes_and_their_rollouts(browser: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    items = seed_file()
    write_final_stats(data / "evo" / "head", {0: items})
    out = tmp_path / "viz.html"
    assert main(["viz", str(data), "-o", str(out)]) == 0
    page.open_viewer(browser, out.as_uri())
    assert page.texts(browser, "#ov-attrs .v") == ["1 seed file(s)"]
    page.click(browser, "tab-attributes")
    rows = page.rows(browser, "attributes-table")
    assert [r["attr"][0] for r in rows] == [a["attribute"] for a in items]  # the file's order
    assert [r["sw"][0] for r in rows] == [page.fmt(a["student_winrate"]) for a in items]
    assert [r["tw"][0] for r in rows] == [page.fmt(a["teacher_winrate"]) for a in items]
    page.click_row(browser, "attributes-table", 0)
    detail = "\n".join(page.texts(browser, "#attribute-fulltext pre"))
    assert "recomputed from the rollouts: the same" in detail and '"time_step": 3' in detail
    shown = page.rows(browser, "rollouts-table")
    assert len(shown) == sum(1 for v in items[0]["rollouts"].values() for x in v if x is not None)
    assert shown[0]["rw"][0] == "rewritten 0" and shown[0]["ss"][0] == page.fmt(items[0]["rollouts"]["user prompt 0"][0]["student_score"]["score"])
