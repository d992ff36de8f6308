"""rm-bias's viewer's rules for five edge cases are the default; ours are an option (issue 28).

The run is written the way rm-bias's helpers write it (tests/redteam/rmbias_reference.py:
``save_system_prompt_stats`` takes attack dicts as they are and writes the given or
computed mean), with every edge case in it. The expected numbers come from the reference
model of their viewer's functions, computed independently of pytest_evals.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.cli.main import main
from pytest_evals.families.redteam.loader import load_run_dir
from pytest_evals.families.redteam.viewdata import build_payload
from tests.redteam import rmbias_reference as ref
from tests.redteam import viewer_page as page

RM, JUDGE = "skywork-v2", "openai/gpt-5-nano"


def rating(name: str, raw: Any, norm: Any, kind: str | None = "classifier") -> dict[str, Any]:
    rater: dict[str, Any] = {"model_name": name}
    if kind is not None:
        rater["rating_function_type"] = kind
    aux: dict[str, Any] = {} if norm is None else {"normalized_score": norm}
    return {"raw_score": raw, "rater": rater, "aux_info": aux}


def resp(text: str, *ratings: dict[str, Any]) -> dict[str, Any]:
    return {"assistant": text, "ratings": list(ratings)}


def atk(sp: str, user: str, responses: list[dict[str, Any]], stored: float | None = None) -> dict[str, Any]:
    aux = {} if stored is None else {"adversarial_score": stored}
    return {"system": sp, "user": user, "responses": responses, "aux_info": aux}


SP = {k: f"System prompt {k}: be persuasive." for k in ("plain", "lenient", "strings", "empty", "nomean")}


def edge_prompts() -> dict[str, dict[str, Any]]:
    """Five prompt files as rm-bias's save_system_prompt_stats writes them, keyed by name."""
    plain = [
        atk(SP["plain"], "u0", [resp("r0", rating(RM, 0.9, 1.2), rating(JUDGE, 3, -0.8, "lm_judge")),
                                resp("r1", rating(RM, 0.4, 0.1), rating(JUDGE, 6, 0.3, "lm_judge"))]),
        # (1) no responses but a stored adversarial score
        atk(SP["plain"], "u1", [], stored=0.7),
        # (2) the judge rated the second response twice: the row shows the last, means count both
        atk(SP["plain"], "u2", [resp("r0", rating(RM, 0.5, 0.6), rating(JUDGE, 4, -0.4, "lm_judge")),
                                resp("r1", rating(RM, 0.2, -0.2), rating(JUDGE, 2, -0.5, "lm_judge"), rating(JUDGE, 9, 1.5, "lm_judge"))]),
    ]
    lenient = [
        # (4) a rater without rating_function_type, a response without ratings
        atk(SP["lenient"], "u0", [resp("r0", rating(RM, 1.0, 0.4, None), rating(JUDGE, 5, -1.1, "lm_judge")),
                                  {"assistant": "never rated"}]),
    ]
    strings = [
        # (5) scores written as text: ignored by their viewer
        atk(SP["strings"], "u0", [resp("r0", rating(RM, "0.5", "0.5"), rating(JUDGE, 7, 0.2, "lm_judge")),
                                  resp("r1", rating(RM, 0.8, 1.0), rating(JUDGE, "3", -0.6, "lm_judge"))]),
    ]
    out = {
        "plain": ref.prompt_file(SP["plain"], plain, {"step": 0, "operation": "init"}),
        # (3) a stale mean_score in the file decides their Explore order
        "lenient": ref.prompt_file(SP["lenient"], lenient, {"step": 1, "operation": "mutate"}, mean_score=5.0, stdev_score=0.0),
        "strings": ref.prompt_file(SP["strings"], strings, {"step": 1, "operation": "mutate"}),
        # only an attack without responses: their writer stores mean 0.0, their viewer N/A
        "empty": ref.prompt_file(SP["empty"], [atk(SP["empty"], "u0", [], stored=2.5)], {"step": 2, "operation": "crossover"}),
    }
    nomean = ref.prompt_file(SP["nomean"], [atk(SP["nomean"], "u0", [resp("r0", rating(RM, 0.1, -2.0), rating(JUDGE, 9, 2.0, "lm_judge"))])])
    del nomean["mean_score"]  # written by another tool: counts as 0 in their order
    out["nomean"] = nomean
    return out


def write_edge_run(run: Path) -> dict[str, dict[str, Any]]:
    """name -> file content; the files are named as their helpers name them."""
    files = edge_prompts()
    for data in files.values():
        ref.write_prompt_file(run / "seed_0", data)
    return files


def payload_prompts(run: Path, edges: str = "rm-bias") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    loaded = load_run_dir(run, edges=edges)  # type: ignore[arg-type]
    payload = build_payload([loaded], edges=edges)  # type: ignore[arg-type]
    [r] = payload["runs"]
    return r, r["seeds"][0]["prompts"]


def close(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and a == pytest.approx(b, abs=1e-12))


def test_every_number_is_what_rm_bias_viewer_computes(tmp_path: Path) -> None:
    run = tmp_path / "evo" / "edge"
    files = write_edge_run(run)
    r, prompts = payload_prompts(run)
    assert r["issues"] == []  # (4): nothing skipped
    names = [x["name"] for x in r["raters"]]
    assert names == [RM, JUDGE]
    assert [x["type"] for x in r["raters"]] == ["classifier", "lm_judge"]
    by_sp = {p["sp"]: p for p in prompts}
    checked = {"attacks": 0, "responses": 0}
    for data in files.values():
        p = by_sp[data["system_prompt"]]
        mean, std = ref.viewer_prompt_stats(data)
        assert close(p["mean"], mean) and close(p["std"], std), data["system_prompt"]
        for a_ours, a_theirs in zip(p["attacks"], data["attacks"], strict=True):
            assert close(a_ours["adv"], ref.attack_score(a_theirs))
            means = ref.viewer_attack_means(a_theirs)
            for i, name in enumerate(names):
                mr, mn = means.get(name, (None, None))
                assert close(a_ours["mr"][i], mr) and close(a_ours["mn"][i], mn), (name, a_theirs["user"])
            for x_ours, x_theirs in zip(a_ours["resp"], a_theirs["responses"], strict=True):
                row = ref.viewer_response_row(x_theirs, names)
                for i, name in enumerate(names):
                    assert close(x_ours["raw"][i], row[name][0]) and close(x_ours["norm"][i], row[name][1])
                checked["responses"] += 1
            checked["attacks"] += 1
    assert checked == {"attacks": 7, "responses": 9}

    plain = by_sp[SP["plain"]]
    # (1) N/A although 0.7 is stored; the reason says so
    assert plain["attacks"][1]["adv"] is None and plain["attacks"][1]["stored"] == 0.7
    assert "0.7 is not used" in plain["attacks"][1]["advWhy"] and "--edge-rules ours" in plain["attacks"][1]["advWhy"]
    # (2) the judge's last rating (raw 9) is shown; its mean counts all three ratings
    twice = plain["attacks"][2]["resp"][1]
    assert twice["raw"][1] == 9 and twice["norm"][1] == 1.5 and twice["twice"] == [JUDGE]
    assert plain["attacks"][2]["mn"][1] == pytest.approx((-0.4 - 0.5 + 1.5) / 3)
    # (5) the text scores are ignored: RM's mean rests on the one numeric value
    strings = by_sp[SP["strings"]]["attacks"][0]
    assert strings["mr"][0] == 0.8 and strings["mn"][0] == 1.0 and strings["mr"][1] == 7
    # (4) the rating without a type and the response without ratings are read
    lenient = by_sp[SP["lenient"]]["attacks"][0]
    assert lenient["adv"] == pytest.approx(ref.adv(0.4, -1.1)) and lenient["resp"][1]["raw"] == [None, None]


def test_the_explore_order_is_the_files_mean_score(tmp_path: Path) -> None:
    run = tmp_path / "evo" / "edge"
    files = write_edge_run(run)
    _, prompts = payload_prompts(run)
    # (3) the viewer's default sort key: the file's mean_score, 0 when the key is absent
    ours = sorted(range(len(prompts)), key=lambda i: (-prompts[i]["fsort"], i))
    by_hash = {ref.file_name(d["system_prompt"])[:-5]: d for d in files.values()}
    theirs = ref.viewer_explore_order(by_hash)
    assert prompts[ours[0]]["h"] == theirs[0] == ref.file_name(SP["lenient"])[:-5]
    assert [prompts[i]["fsort"] for i in ours] == [by_hash[h].get("mean_score", 0) for h in theirs]
    assert {p["sp"]: p["fsort"] for p in prompts}[SP["nomean"]] == 0.0


def test_ours_behind_the_option(tmp_path: Path) -> None:
    run = tmp_path / "evo" / "edge"
    write_edge_run(run)
    r, prompts = payload_prompts(run, "ours")
    by_sp = {p["sp"]: p for p in prompts}
    # (4) the file with a rater without a type is skipped, the field named
    [issue] = r["issues"]
    assert issue["field"] == "attacks[0].responses[0].ratings[0].rater.rating_function_type"
    assert "edge rules 'ours'" in issue["message"] and SP["lenient"] not in by_sp
    plain = by_sp[SP["plain"]]
    # (1) the stored score fills the attack without responses, with the reason
    assert plain["attacks"][1]["adv"] == 0.7 and plain["attacks"][1]["advSrc"] == "file"
    assert "edge rules 'ours'" in plain["attacks"][1]["advWhy"]
    assert by_sp[SP["empty"]]["mean"] == 2.5
    # (2) the first of the judge's two ratings
    assert plain["attacks"][2]["resp"][1]["raw"][1] == 2
    # (5) text read as numbers
    strings = by_sp[SP["strings"]]["attacks"][0]
    assert strings["mr"][0] == pytest.approx(0.65) and strings["mn"][0] == pytest.approx(0.75) and strings["mr"][1] == 5
    assert strings["adv"] == pytest.approx(ref.adv(0.75, (0.2 - 0.6) / 2))


def test_a_response_without_ratings_is_skipped_under_ours_only(tmp_path: Path) -> None:
    run = tmp_path / "evo" / "r"
    data = ref.prompt_file("sp", [atk("sp", "u", [resp("r0", rating(RM, 1, 0.5), rating(JUDGE, 2, 0.1, "lm_judge")), {"assistant": "x"}])])
    ref.write_prompt_file(run / "seed_0", data)
    assert load_run_dir(run).issues == []
    [issue] = load_run_dir(run, edges="ours").issues
    assert issue.field == "attacks[0].responses[1].ratings" and "no ratings" in issue.message


def test_the_cli_option_and_the_rules_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    write_edge_run(data / "evo" / "edge")
    out = tmp_path / "viz.html"
    assert main(["viz", str(data), "-o", str(out)]) == 0
    assert "0 file(s) skipped" in capsys.readouterr().out
    default = page_payload(out)
    assert default["edges"]["mode"] == "rm-bias"
    assert [x["key"] for x in default["edges"]["rules"]] == ["no-responses", "same-rater-twice", "sort", "lenient-fields", "string-scores"]
    assert all(x["reason"] for x in default["edges"]["rules"])
    assert main(["viz", str(data), "-o", str(out), "--edge-rules", "ours"]) == 0
    captured = capsys.readouterr()
    assert "1 file(s) skipped" in captured.out and "rating_function_type" in captured.err
    assert page_payload(out)["edges"]["mode"] == "ours"
    with pytest.raises(SystemExit):
        main(["viz", str(data), "-o", str(out), "--edge-rules", "theirs"])


def page_payload(html: Path) -> dict[str, Any]:
    text = html.read_text(encoding="utf-8")
    start = text.index('id="viz-data">') + len('id="viz-data">')
    return json.loads(text[start:text.index("</script>", start)])


def test_the_page_sorts_and_explains_by_the_rules(browser: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    files = write_edge_run(data / "evo" / "edge")
    for mode in ("rm-bias", "ours"):
        out = tmp_path / f"viz-{mode}.html"
        assert main(["viz", str(data), "-o", str(out), "--edge-rules", mode]) == 0
        page.open_viewer(browser, out.as_uri())
        page.click(browser, "tab-explore")
        rows = page.rows(browser, "prompts-table")
        if mode == "rm-bias":
            assert page.sort_state(browser, "prompts-table") == ("File mean_score", "sorted-desc")
            assert rows[0]["sp"][0] == SP["lenient"]  # the stale 5.0 in the file
            want = sorted((d.get("mean_score", 0) for d in files.values()), reverse=True)
            assert [float(r["fsort"][1]) for r in rows] == want
        else:
            assert page.sort_state(browser, "prompts-table") == ("Mean Adv Score", "sorted-desc")
            shown = [float(r["mean"][1]) for r in rows if r["mean"][1]]
            assert shown == sorted(shown, reverse=True) and len(shown) == len(rows)
        rules = page.texts(browser, "#edge-rules li")
        assert len(rules) == 5
        if mode == "ours":
            assert "why: the writer computed that score" in rules[0]
        else:
            assert rules[0].startswith("an attack without responses is N/A") and "--edge-rules ours" in rules[0]
        # the attack without responses, its reason shown
        idx = [r["sp"][0] for r in rows].index(SP["plain"])
        page.click_row(browser, "prompts-table", idx)
        page.click_row(browser, "attacks-table", 1)
        detail = "\n".join(page.texts(browser, "#attack-fulltext pre"))
        assert ("0.7 is not used" in detail) == (mode == "rm-bias")
        page.click_row(browser, "attacks-table", 2)
        page.click_row(browser, "responses-table", 1)
        labels = "\n".join(page.texts(browser, "#response-fulltext .label"))
        assert ("the last rating is shown" in labels) == (mode == "rm-bias")
        assert ("the first rating is shown" in labels) == (mode == "ours")


def test_a_rater_type_that_is_not_text_is_read_under_their_rules(tmp_path: Path) -> None:
    run = tmp_path / "evo" / "r"
    weird = rating(RM, 1.0, 0.5)
    weird["rater"]["rating_function_type"] = 3
    data = ref.prompt_file("sp", [atk("sp", "u", [resp("r0", weird, rating(JUDGE, 2, -0.5, "lm_judge"))])])
    ref.write_prompt_file(run / "seed_0", data)
    [record] = load_run_dir(run).seeds[0].prompts
    assert record.adversarial_scores == [pytest.approx(ref.adv(0.5, -0.5))]
    [issue] = load_run_dir(run, edges="ours").issues
    assert issue.field == "attacks[0].responses[0].ratings[0].rater.rating_function_type"
