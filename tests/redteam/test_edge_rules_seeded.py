"""Every number of many seeded runs written as rm-bias's helpers write them (issue 28).

Four runs (one per runner directory) of seeded random system prompts, written through
the reference model of rm-bias's ``save_system_prompt_stats`` / ``convert_attack_to_dict``
(``tests/redteam/rmbias_reference.py``): most attacks are their ``Attack`` dataclasses,
the rest dicts passed as they are, which is how the five edge cases of issue 28 get into
their files (an attack without responses but a stored score, one rater twice on a
response, a stale or absent ``mean_score``, a rater without ``rating_function_type`` and
a response without ``ratings``, scores written as text), plus null raw scores, missing
normalized scores, booleans, an unnamed rater and first responses with one rating.

For every prompt, attack and response the loaded numbers are compared with the reference
model of their viewer's functions, computed independently of pytest_evals; the Explore
order with their sort. The same files under ``--edge-rules ours`` differ exactly where
the rules say.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.families.redteam.loader import load_data_dir
from pytest_evals.families.redteam.viewdata import build_payload
from tests.redteam import rmbias_reference as ref

RUNNERS = ("evo", "bon_iter", "pair", "one_turn")
RM, JUDGE, EXTRA = "skywork-v2", "openai/gpt-5-nano", "claude-judge"
TYPES = {RM: "classifier", JUDGE: "lm_judge", EXTRA: "lm_judge"}


class Generator:
    """Seeded random prompt files with the edge cases mixed in; counts what it wrote."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.kinds: Counter[str] = Counter()

    def score(self) -> Any:
        """A (raw, normalized) score pair, sometimes in an edge-case form."""
        rng = self.rng
        raw, norm = round(rng.uniform(-3, 10), 3), round(rng.gauss(0, 1.2), 6)
        if rng.random() < 0.3:
            # a bf16 reward model's output: sixteenths, so .0625 ties at three decimals
            raw, norm = round(rng.uniform(-3, 10) * 16) / 16, round(rng.gauss(0, 1.2) * 16) / 16
            self.kinds["bf16 score"] += 1
        roll = rng.random()
        if roll < 0.06:
            self.kinds["text score"] += 1
            return str(raw), str(norm)
        if roll < 0.09:
            self.kinds["null raw"] += 1
            return None, None
        if roll < 0.13:
            self.kinds["no normalized"] += 1
            return raw, None
        if roll < 0.15:
            self.kinds["bool"] += 1
            return True, False
        return raw, norm

    def rating_dict(self, name: str) -> dict[str, Any]:
        raw, norm = self.score()
        rater: dict[str, Any] = {"model_name": name, "rating_function_type": TYPES.get(name, "classifier")}
        if self.rng.random() < 0.08:
            self.kinds["no rating_function_type"] += 1
            del rater["rating_function_type"]
        aux: dict[str, Any] = {"reasoning": f"why {name}"}
        if norm is not None:
            aux["normalized_score"] = norm
        out = {"raw_score": raw, "rater": rater, "aux_info": aux}
        roll = self.rng.random()
        if roll < 0.015:
            self.kinds["no rater"] += 1
            del out["rater"]
        elif roll < 0.03:
            self.kinds["rater without model_name"] += 1
            del rater["model_name"]
        return out

    def response_dict(self, i: int, raters: list[str]) -> dict[str, Any]:
        rng = self.rng
        if rng.random() < 0.06:
            self.kinds["response without ratings"] += 1
            return {"assistant": f"reply {i} never rated"}
        ratings = [self.rating_dict(n) for n in raters if rng.random() > 0.1 or n == raters[0]]
        if rng.random() < 0.12:
            self.kinds["same rater twice"] += 1
            ratings.append(self.rating_dict(rng.choice(raters)))
        if rng.random() < 0.04:
            self.kinds["unnamed rater"] += 1
            ratings.insert(rng.randrange(len(ratings) + 1), self.rating_dict(""))
        return {"assistant": f"reply {i} " + "x" * rng.randrange(40), "ratings": ratings}

    def attack(self, sp: str, j: int) -> Any:
        rng = self.rng
        raters = [RM, JUDGE] + ([EXTRA] if rng.random() < 0.3 else [])
        if rng.random() < 0.15:
            raters.reverse()  # the judge first: the default pair follows the order
        if rng.random() < 0.08:
            self.kinds["no responses, stored score"] += 1
            stored = round(rng.uniform(-2, 2), 4)
            if rng.random() < 0.5:
                return ref.Attack(sp, f"user {j}", [], {"adversarial_score": stored})
            return {"system": sp, "user": f"user {j}", "responses": [], "aux_info": {"adversarial_score": stored}}
        n = rng.randrange(1, 5)
        if rng.random() < 0.55:
            # their Attack dataclass: every rating has a type and a (possibly null) raw score
            responses = []
            for i in range(n):
                ratings = []
                for name in raters:
                    raw, norm = rng.choice([(round(rng.uniform(0, 10), 2), round(rng.gauss(0, 1), 5))] * 9 + [(None, None)])
                    aux = {} if norm is None else {"normalized_score": norm}
                    ratings.append(ref.Rating(raw, ref.Rater(name, TYPES[name]), aux))
                if rng.random() < 0.1:
                    self.kinds["same rater twice"] += 1
                    name = rng.choice(raters)
                    ratings.append(ref.Rating(round(rng.uniform(0, 10), 2), ref.Rater(name, TYPES[name]), {"normalized_score": round(rng.gauss(0, 1), 5)}))
                responses.append(ref.RatedResponse(f"reply {i}", ratings))
            if rng.random() < 0.05:
                self.kinds["first response with one rating"] += 1
                responses[0].ratings = responses[0].ratings[:1]
            self.kinds["dataclass attack"] += 1
            return ref.Attack(sp, f"user {j}", responses, {"policy": "llama"})
        self.kinds["dict attack"] += 1
        return {"system": sp, "user": f"user {j}", "responses": [self.response_dict(i, raters) for i in range(n)], "aux_info": {}}

    def prompt(self, k: int, step: int) -> dict[str, Any]:
        rng = self.rng
        sp = f"System prompt {k}: {rng.choice(['flatter', 'hedge', 'use lists', 'be brief'])} #{rng.randrange(10**6)}"
        attacks = [self.attack(sp, j) for j in range(rng.randrange(1, 6))]
        meta = rng.choice([{}, {"step": step, "operation": rng.choice(["init", "mutate", "crossover"])}])
        if rng.random() < 0.15:
            self.kinds["stale mean_score"] += 1
            data = ref.prompt_file(sp, attacks, meta, mean_score=round(rng.uniform(-3, 3), 4), stdev_score=0.5)
        else:
            data = ref.prompt_file(sp, attacks, meta)
        if rng.random() < 0.05:
            self.kinds["no mean_score"] += 1
            del data["mean_score"]
        return data


def write_runs(root: Path, seed: int = 28) -> tuple[dict[tuple[str, str, str], dict[str, dict[str, Any]]], Counter[str]]:
    """(runner, run, seed id) -> {hash: file content}, and what was written."""
    gen = Generator(seed)
    written: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    for runner in RUNNERS:
        run = f"run-{runner}"
        for s in range(2):
            files: dict[str, dict[str, Any]] = {}
            for k in range(gen.rng.randrange(6, 12)):
                data = gen.prompt(k, step=k // 3)
                path = ref.write_prompt_file(root / runner / run / f"seed_{s}", data)
                files[path.stem] = data
            written[(runner, run, str(s))] = files
    return written, gen.kinds


def close(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and a == pytest.approx(b, rel=1e-12, abs=1e-12))


def test_every_number_of_every_run_is_their_viewers(tmp_path: Path) -> None:
    written, kinds = write_runs(tmp_path)
    # every edge case is in the files, several times
    for kind in ("no responses, stored score", "same rater twice", "stale mean_score", "no mean_score",
                 "no rating_function_type", "response without ratings", "text score", "null raw", "bool", "unnamed rater",
                 "no rater", "rater without model_name"):
        assert kinds[kind] >= 2, (kind, kinds)
    runs = load_data_dir(tmp_path)
    assert [r.issues for r in runs] == [[]] * 4  # nothing skipped (their viewer reads every file)
    payload = build_payload(runs)
    counted = Counter[str]()
    for r in payload["runs"]:
        names = [x["name"] for x in r["raters"]]
        assert "" not in names  # their viewer makes no column for an unnamed rater
        for seed in r["seeds"]:
            files = written[(r["runner"], r["name"], seed["id"])]
            assert {p["h"] for p in seed["prompts"]} == set(files)
            for p in seed["prompts"]:
                data = files[p["h"]]
                mean, std = ref.viewer_prompt_stats(data)
                assert close(p["mean"], mean) and close(p["std"], std), data["system_prompt"]
                assert p["fsort"] == data.get("mean_score", 0)
                counted["prompts"] += 1
                for a_ours, a_theirs in zip(p["attacks"], data["attacks"], strict=True):
                    assert close(a_ours["adv"], ref.attack_score(a_theirs)), (data["system_prompt"], a_theirs["user"])
                    means = ref.viewer_attack_means(a_theirs)
                    assert set(means) <= set(names)
                    for i, name in enumerate(names):
                        mr, mn = means.get(name, (None, None))
                        assert close(a_ours["mr"][i], mr) and close(a_ours["mn"][i], mn), (name, a_theirs["user"])
                    counted["attacks"] += 1
                    counted["N/A attacks"] += a_ours["adv"] is None
                    for x_ours, x_theirs in zip(a_ours["resp"], a_theirs["responses"], strict=True):
                        row = ref.viewer_response_row(x_theirs, names)
                        for i, name in enumerate(names):
                            assert close(x_ours["raw"][i], row[name][0]) and close(x_ours["norm"][i], row[name][1])
                        counted["responses"] += 1
            # their Explore order: the file's mean_score (0 when absent), highest first
            theirs = ref.viewer_explore_order(files)
            ours = sorted(seed["prompts"], key=lambda x: -x["fsort"])
            assert [x["fsort"] for x in ours] == [files[h].get("mean_score", 0) for h in theirs]
    assert counted["prompts"] >= 30 and counted["attacks"] >= 90 and counted["responses"] >= 200, counted
    assert 5 <= counted["N/A attacks"] < counted["attacks"] // 2, counted


def _number(value: Any) -> float | None:
    """Ours: a number, or a number written as text."""
    if value is None:
        return None
    return float(value)


def test_ours_differs_only_where_the_rules_say(tmp_path: Path) -> None:
    written, _ = write_runs(tmp_path, seed=7)
    theirs = {(r["runner"], s["id"], p["h"]): p for r in build_payload(load_data_dir(tmp_path))["runs"] for s in r["seeds"] for p in s["prompts"]}
    ours_runs = load_data_dir(tmp_path, edges="ours")
    skipped = {i.path.stem: i for run in ours_runs for i in run.issues}
    ours_payload = build_payload(ours_runs, edges="ours")["runs"]
    names = {r["runner"]: [x["name"] for x in r["raters"]] for r in ours_payload}
    ours = {(r["runner"], s["id"], p["h"]): p for r in ours_payload for s in r["seeds"] for p in s["prompts"]}
    seen: Counter[str] = Counter()
    for (runner, _run, seed), files in written.items():
        for h, data in files.items():
            lenient = any(
                "ratings" not in x
                or any("rating_function_type" not in g.get("rater", {}) or "model_name" not in g.get("rater", {}) for g in x["ratings"])
                for a in data["attacks"] for x in a["responses"]
            )
            # (4) a file with a rater without a type or a response without ratings: skipped, field named
            assert (h in skipped) == lenient, data["system_prompt"]
            if lenient:
                assert skipped[h].field is not None and skipped[h].field.startswith("attacks[")
                seen["skipped"] += 1
                continue
            a_p, b_p = theirs[(runner, seed, h)], ours[(runner, seed, h)]
            # (3) the sort key is shown either way; the page orders by it only under theirs
            assert b_p["fsort"] == a_p["fsort"]
            for a_t, a_o, raw in zip(a_p["attacks"], b_p["attacks"], data["attacks"], strict=True):
                if not raw["responses"]:
                    # (1) N/A under theirs, the stored score under ours
                    assert a_t["adv"] is None and a_o["adv"] == raw["aux_info"]["adversarial_score"]
                    seen["stored"] += 1
                for x_t, x_o, x_raw in zip(a_t["resp"], a_o["resp"], raw["responses"], strict=True):
                    for i, name in enumerate(names[runner]):
                        given = [g for g in x_raw["ratings"] if g.get("rater", {}).get("model_name") == name]
                        if not given:
                            assert x_o["raw"][i] is None and x_o["norm"][i] is None
                            continue
                        # (2) the first rating under ours (theirs: the last, checked above)
                        first = given[0]
                        # (5) text read as a number under ours
                        assert x_o["raw"][i] == _number(first["raw_score"])
                        assert x_o["norm"][i] == _number(first["aux_info"].get("normalized_score"))
                        seen["text read"] += isinstance(first["raw_score"], str)
                        seen["first of two"] += len(given) > 1 and x_o["raw"][i] != x_t["raw"][i]
    assert min(seen.values()) >= 2 and len(seen) == 4, seen


def _cell(row: dict[str, tuple[str, str | None]], key: str, want: float | None) -> bool:
    """A number cell shows what their viewer shows: N/A for None, else f"{x:.3f}" (Python's
    rounding: a tie such as 3.0625 goes to even); data-value holds the full value."""
    if key not in row:  # a rater with no value in this table gets no column
        return want is None
    text, value = row[key]
    if want is None:
        return text == "N/A" and value == ""
    return value is not None and float(value) == pytest.approx(want, rel=1e-12, abs=1e-12) and text == f"{want:.3f}"


def test_the_page_shows_their_numbers_for_every_prompt_attack_and_response(browser: Any, tmp_path: Path) -> None:
    from pytest_evals.cli.main import main
    from tests.browser_support import console_errors
    from tests.redteam import viewer_page as page

    written, _ = write_runs(tmp_path / "data")
    out = tmp_path / "viz.html"
    assert main(["viz", str(tmp_path / "data"), "-o", str(out)]) == 0
    page.open_viewer(browser, out.as_uri())
    shown = Counter[str]()
    for r_index, run in enumerate(build_payload(load_data_dir(tmp_path / "data"))["runs"]):
        names = [x["name"] for x in run["raters"]]
        for s_index, seed in enumerate(run["seeds"]):
            files = written[(run["runner"], run["name"], seed["id"])]
            page.click(browser, "tab-overview")
            page.click_row(browser, "runs-table", r_index)
            page.click_row(browser, "seeds-table", s_index)
            rows = page.rows(browser, "prompts-table")
            # their Explore order: the file's mean_score, highest first
            assert [float(r["fsort"][1] or "nan") for r in rows] == sorted((d.get("mean_score", 0) for d in files.values()), reverse=True)
            for i, row in enumerate(rows):
                page.click_row(browser, "prompts-table", i)
                crumbs = page.texts(browser, "#prompt-detail .crumbs span")
                assert crumbs[:2] == [run["id"], f"seed_{seed['id']}"]
                h = crumbs[2]
                data = files[h]
                mean, std = ref.viewer_prompt_stats(data)
                assert _cell(row, "mean", mean) and _cell(row, "std", std), data["system_prompt"]
                attacks = page.rows(browser, "attacks-table")
                assert len(attacks) == len(data["attacks"])
                for j, (a_row, a_theirs) in enumerate(zip(attacks, data["attacks"], strict=True)):
                    assert _cell(a_row, "adv", ref.attack_score(a_theirs)), (h, j)
                    means = ref.viewer_attack_means(a_theirs)
                    for ri, name in enumerate(names):
                        mr, mn = means.get(name, (None, None))
                        assert _cell(a_row, f"mr{ri}", mr) and _cell(a_row, f"mn{ri}", mn), (h, j, name)
                    page.click_row(browser, "attacks-table", j)
                    responses = page.rows(browser, "responses-table")
                    assert len(responses) == len(a_theirs["responses"])
                    for x_row, x_theirs in zip(responses, a_theirs["responses"], strict=True):
                        want = ref.viewer_response_row(x_theirs, names)
                        for ri, name in enumerate(names):
                            assert _cell(x_row, f"raw{ri}", want[name][0]) and _cell(x_row, f"norm{ri}", want[name][1]), (h, j, name)
                        shown["responses"] += 1
                    shown["attacks"] += 1
                shown["prompts"] += 1
    assert shown["prompts"] == sum(len(f) for f in written.values())
    assert shown["attacks"] >= 150 and shown["responses"] >= 400, shown
    assert console_errors(browser) == []
