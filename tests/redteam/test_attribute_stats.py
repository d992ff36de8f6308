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
from tests.browser_support import console_errors
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


# ---------------------------------------------------------------- their writer, both directions

def their_save_attribute_stats(run: Path, direction: str, seeds: dict[int, list[dict[str, Any]]]) -> None:
    """Runner.save_attribute_stats at their HEAD: per seed state the records ordered by student
    win rate (None last for "plus", first... by +inf for "minus"), json.dump with indent 4
    (NaN written as a bare token), overwriting."""
    folder = run / "final_stats"
    folder.mkdir(parents=True, exist_ok=True)
    for i, items in seeds.items():
        if direction == "plus":
            ordered = sorted(items, key=lambda a: a["student_winrate"] if a["student_winrate"] is not None else float("-inf"), reverse=True)
        else:
            ordered = sorted(items, key=lambda a: a["student_winrate"] if a["student_winrate"] is not None else float("inf"))
        (folder / f"seed_{i}.json").write_text(json.dumps(ordered, indent=4), encoding="utf-8")


def seeded_attributes(rng: Any, n: int) -> list[dict[str, Any]]:
    out = []
    for k in range(n):
        binary = rng.random() < 0.4  # judge-like win rates in {-1, 0, 1}, else reward differences
        students = [rng.choice([-1, 0, 1]) if binary else round(rng.gauss(0.2, 0.5) + (8 if rng.random() < 0.05 else 0), 4)
                    if rng.random() > 0.1 else None for _ in range(rng.randrange(1, 9))]
        teachers = [rng.choice([-1, 0, 1]) if rng.random() > 0.3 else None for _ in students]
        out.append(attribute(f"Attribute {k}: {'x' * rng.randrange(5)}", students, teachers, rng.randrange(4)))
    return out


@pytest.mark.parametrize("direction", ["plus", "minus"])
def test_seeded_final_stats_every_attribute_is_their_number(tmp_path: Path, direction: str) -> None:
    import random

    rng = random.Random(28 if direction == "plus" else 29)
    seeds = {i: seeded_attributes(rng, rng.randrange(10, 16)) for i in (0, 1, 4)}
    # rm-bias's current runners name their data directory after their type: data/recall/<run>
    run = tmp_path / "data" / "recall" / f"run-{direction}"
    their_save_attribute_stats(run, direction, seeds)
    [(runner, found)] = list(find_runs(tmp_path / "data"))
    assert (runner, found) == ("recall", run)
    loaded = load_run_dir(found)
    assert loaded.issues == [] and [s.seed_id for s in loaded.attribute_stats] == ["0", "1", "4"]
    checked = 0
    for seed in loaded.attribute_stats:
        stored = json.loads(seed.path.read_text(encoding="utf-8"))
        assert [a.attribute for a in seed.attributes] == [x["attribute"] for x in stored]  # their order kept
        for rec, want in zip(seed.attributes, stored, strict=True):
            for got, computed, wanted, key in ((rec.student_winrate, rec.student_computed, want["student_winrate"], "student_score"),
                                               (rec.teacher_winrate, rec.teacher_computed, want["teacher_winrate"], "teacher_score")):
                scores = [r[key]["score"] for v in want["rollouts"].values() for r in v if r is not None and "score" in r.get(key, {})]
                independent = their_winrate(scores)
                assert (got is None) == (wanted is None) and (computed is None) == (independent is None)
                if wanted is not None:
                    assert got == pytest.approx(wanted, abs=1e-12) and computed == pytest.approx(independent, abs=1e-12)
                checked += 1
    assert checked >= 60


def test_their_nan_win_rate_reads_as_not_available(tmp_path: Path) -> None:
    # their winrate of a NaN score is NaN (every value outside NaN fences), which json.dump writes as NaN
    run = tmp_path / "evo" / "nan"
    item = attribute("NaN score", [0.5, 0.2], [1, 0], 0)
    item["rollouts"]["user prompt 0"][0]["student_score"]["score"] = float("nan")
    item["student_winrate"] = float("nan")
    write_final_stats(run, {0: [item]})
    assert "NaN" in (run / "final_stats" / "seed_0.json").read_text()
    [rec] = load_run_dir(run).attribute_stats[0].attributes
    assert math.isnan(rec.student_winrate or 0.0) and rec.student_computed is not None and math.isnan(rec.student_computed)
    [a] = build_payload([load_run_dir(run)])["runs"][0]["attrs"][0]["items"]
    assert a["sw"] is None and a["swc"] is None and a["tw"] == pytest.approx(0.5)


BAD_SHAPES = [
    (lambda x: x.update(student_winrate="0.5"), "[0].student_winrate", "number or null"),
    (lambda x: x.update(teacher_winrate=True), "[0].teacher_winrate", "number or null"),
    (lambda x: x.update(meta=[1]), "[0].meta", "object"),
    (lambda x: x.update(rollouts=[]), "[0].rollouts", "object mapping"),
    (lambda x: x["rollouts"].update({"u": "text"}), "[0].rollouts['u']", "list of rollouts"),
    (lambda x: x["rollouts"]["user prompt 0"].append(7), "[0].rollouts['user prompt 0'][1]", "rollout object or null"),
    (lambda x: x["rollouts"]["user prompt 0"][0].pop("student_score"), "[0].rollouts['user prompt 0'][0].student_score", "field required"),
    (lambda x: x["rollouts"]["user prompt 0"][0].pop("baseline_response"), "[0].rollouts['user prompt 0'][0].baseline_response", "field required"),
    (lambda x: x["rollouts"]["user prompt 0"][0]["student_score"].update(score="0.5"), "[0].rollouts['user prompt 0'][0].student_score.score", "number or null"),
    (lambda x: x["rollouts"]["user prompt 0"][0]["student_score"].pop("model_name"), "[0].rollouts['user prompt 0'][0].student_score.model_name", "field required"),
    (lambda x: x["rollouts"]["user prompt 0"][0].update(teacher_score=3), "[0].rollouts['user prompt 0'][0].teacher_score", "object"),
    (lambda x: x["rollouts"]["user prompt 0"][0].update(rewritten_response=["a"]), "[0].rollouts['user prompt 0'][0].rewritten_response", "string"),
    (lambda x: x["rollouts"]["user prompt 0"][0].update(policy_model=1), "[0].rollouts['user prompt 0'][0].policy_model", "string"),
]


@pytest.mark.parametrize(("spoil", "field", "words"), BAD_SHAPES, ids=[b[1] for b in BAD_SHAPES])
def test_a_bad_field_is_named_with_the_file(tmp_path: Path, spoil: Any, field: str, words: str, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "evo" / "bad"
    good = attribute("fine", [0.5, 0.2, 0.3], [1, 0, 1], 0)
    bad = json.loads(json.dumps(good))
    spoil(bad)
    write_final_stats(run, {0: [good], 1: [bad]})
    loaded = load_run_dir(run)
    assert [s.seed_id for s in loaded.attribute_stats] == ["0"]  # the good file still loads
    [issue] = loaded.issues
    assert issue.path.name == "seed_1.json" and issue.field == field and words in issue.message
    # the command names file and field, still lists the good file, and exits 1
    assert main(["attribute-stats", str(run)]) == 1
    out, err = capsys.readouterr()
    assert f"seed_1.json: field {field!r}: " in err and words in err
    assert "seed_0.json" in out and "fine" in out


# ---------------------------------------------------------------- the command

def test_the_command_lists_their_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = seed_file()
    items[1]["student_winrate"] = 0.9  # edited after writing: recomputed 0.4
    data = tmp_path / "data"
    write_final_stats(data / "exp_test_clusters" / "r", {0: items, 7: items[:1]})
    assert main(["attribute-stats", str(data)]) == 0
    out = capsys.readouterr().out
    blocks = out.strip().split("\n\n")
    assert len(blocks) == 2 and "seed_0.json (run exp_test_clusters/r, seed 0): 4 attribute(s)" in blocks[0]
    rows = [line.split() for line in blocks[0].splitlines()[2:6]]
    for row, want in zip(rows, items, strict=True):
        prompts, rollouts = len(want["rollouts"]), sum(1 for v in want["rollouts"].values() for x in v if x is not None)
        sw = page.fmt(want["student_winrate"])
        assert row[1] == sw and row[5:7] == [str(prompts), str(rollouts)], row
        assert " ".join(row[7:]) == want["attribute"]
    assert rows[1][2] == "0.400*" and "differs from the one recomputed" in blocks[0]
    assert rows[0][2] == page.fmt(items[0]["student_winrate"]) and rows[0][3] == page.fmt(items[0]["teacher_winrate"])

    # one file, one seed, the first N, JSON
    assert main(["attribute-stats", str(data / "exp_test_clusters" / "r" / "final_stats" / "seed_7.json")]) == 0
    assert "1 attribute(s)" in capsys.readouterr().out
    assert main(["attribute-stats", str(data), "--seed", "0", "--top", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    [f] = doc["files"]
    assert f["seed"] == "0" and [a["attribute"] for a in f["attributes"]] == [a["attribute"] for a in items[:2]]
    assert f["attributes"][1]["student_winrate"] == 0.9 and f["attributes"][1]["student_recomputed"] == pytest.approx(0.4)
    assert f["attributes"][0]["failed_rollouts"] == 1 and doc["errors"] == []


def test_the_command_without_stats_or_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attribute-stats", str(tmp_path / "missing")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    (tmp_path / "evo" / "r" / "seed_0").mkdir(parents=True)
    assert main(["attribute-stats", str(tmp_path)]) == 1
    assert "no final_stats/seed_<i>.json under" in capsys.readouterr().err
    (tmp_path / "x.json").write_text("{broken", encoding="utf-8")
    assert main(["attribute-stats", str(tmp_path / "x.json")]) == 1
    assert "x.json: invalid JSON at line 1" in capsys.readouterr().err


def test_the_page_shows_every_attribute_of_their_files(browser: Any, tmp_path: Path) -> None:
    import random

    rng = random.Random(5)
    seeds = {i: seeded_attributes(rng, 12) for i in (0, 3)}
    seeds[3][2]["teacher_winrate"] = 0.75  # stale: the page shows the recomputed value beside it
    stale_name = seeds[3][2]["attribute"]
    data = tmp_path / "data"
    run = data / "recall" / "head"
    their_save_attribute_stats(run, "plus", seeds)
    (run / "final_stats" / "seed_9.json").write_text(json.dumps([{"attribute": "x", "rollouts": {"u": [{"baseline_response": "b"}]}}]), encoding="utf-8")
    out = tmp_path / "viz.html"
    assert main(["viz", str(data), "-o", str(out)]) == 0
    page.open_viewer(browser, out.as_uri())
    # the bad file is named with its field on the Overview
    skipped = page.texts(browser, "#issues li")
    assert len(skipped) == 1 and "seed_9.json" in skipped[0] and "field '[0].rollouts['u'][0].rewritten_response'" in skipped[0]
    page.click(browser, "tab-attributes")
    for index, seed_id in enumerate((0, 3)):
        browser.execute_script(
            "const s = document.getElementById('attr-seed-picker'); s.value = arguments[0]; s.dispatchEvent(new Event('change'));", str(index))
        stored = json.loads((run / "final_stats" / f"seed_{seed_id}.json").read_text(encoding="utf-8"))
        rows = page.rows(browser, "attributes-table")
        # the table's preview collapses white space (the full text opens below it)
        assert [r["attr"][0] for r in rows] == [" ".join(a["attribute"].split()) for a in stored]
        for row, want in zip(rows, stored, strict=True):
            for col, key, score in (("sw", "student_winrate", "student_score"), ("tw", "teacher_winrate", "teacher_score")):
                assert row[col][0] == page.fmt(want[key])
                scores = [r[score]["score"] for v in want["rollouts"].values() for r in v if r is not None and "score" in r.get(score, {})]
                assert row[col + "c"][0] == page.fmt(their_winrate(scores))
            assert row["prompts"][0] == str(len(want["rollouts"]))
            assert row["n"][0] == str(sum(1 for v in want["rollouts"].values() for x in v if x is not None))
    shown = page.rows(browser, "attributes-table")
    at = [r["attr"][0] for r in shown].index(" ".join(stale_name.split()))
    assert shown[at]["tw"][0] == "0.750" and shown[at]["twc"][0] != "0.750"
    page.click_row(browser, "attributes-table", at)
    detail = "\n".join(page.texts(browser, "#attribute-fulltext pre"))
    assert "0.750000 (recomputed from the rollouts: " in detail
    assert console_errors(browser) == []


def test_hostile_text_cannot_drive_the_terminal_or_the_page(browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hostile = "\x1b[2J\x1b]0;owned\x07 </script><img src=x onerror=\"document.title='owned'\"> \u202eevil"
    items = [attribute(hostile, [0.5, 0.1], [1, 0], 0)]
    items[0]["rollouts"] = {hostile: items[0]["rollouts"]["user prompt 0"]}
    data = tmp_path / "data"
    write_final_stats(data / "evo" / "h", {0: items})
    assert main(["attribute-stats", str(data), "--full"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b[2J" in out and "\\u202eevil" in out
    bad = json.loads(json.dumps(items))
    bad[0]["rollouts"][hostile][0]["student_score"]["score"] = "\x1b[31m"
    write_final_stats(data / "evo" / "h", {1: bad})
    assert main(["attribute-stats", str(data)]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "student_score.score" in err
    out_html = tmp_path / "viz.html"
    assert main(["viz", str(data), "-o", str(out_html)]) == 0
    page.open_viewer(browser, out_html.as_uri())
    page.click(browser, "tab-attributes")
    page.click_row(browser, "attributes-table", 0)
    assert browser.title != "owned" and not browser.find_elements("css selector", "img")
    assert hostile in page.texts(browser, "#attribute-fulltext pre")
    assert console_errors(browser) == []


def test_a_fifo_named_like_a_seed_file_is_named_not_waited_for(tmp_path: Path) -> None:
    import os

    run = tmp_path / "evo" / "fifo"
    write_final_stats(run, {0: seed_file()})
    os.mkfifo(run / "final_stats" / "seed_1.json")
    loaded = load_run_dir(run)  # returns: the FIFO is not opened for a blocking read
    assert [s.seed_id for s in loaded.attribute_stats] == ["0"]
    [issue] = loaded.issues
    assert issue.path.name == "seed_1.json" and "FIFO" in issue.message
