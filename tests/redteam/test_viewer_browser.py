"""The viewer in headless Chromium: real files -> `pytest-evals viz` -> the page a user sees."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.cli.main import main
from pytest_evals.families.redteam.scoring import adversariality
from pytest_evals.families.redteam.synthetic import SyntheticSpec, write_synthetic_run
from tests.browser_support import console_errors
from tests.redteam import viewer_page as page
from tests.redteam.samples import attack_dict, rating

pytestmark = pytest.mark.browser

RATERS = ["rm-small", "judge-model"]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def expected_attack(attack: dict[str, Any]) -> dict[str, Any]:
    """The attack row, computed here from the file (independently of the viewer's Python)."""
    out: dict[str, Any] = {"u": attack["user"]}
    zs = []
    for i, name in enumerate(RATERS):
        ratings = [next(r for r in resp["ratings"] if r["rater"]["model_name"] == name) for resp in attack["responses"]]
        norms = [r["aux_info"].get("normalized_score") for r in ratings]
        out[f"mr{i}"] = _mean([r["raw_score"] for r in ratings])
        out[f"mn{i}"] = _mean([n for n in norms if n is not None])
        # rm-bias's rule (the default): the mean of the normalized scores present
        zs.append(_mean([n for n in norms if n is not None]))
    out["adv"] = None if None in zs else adversariality(zs[0], zs[1])
    return out


@pytest.fixture(scope="module")
def big_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """1,000 system prompts x 5 attacks x 4 responses (2 seeds, every 7th attack N/A) + a small run."""
    root = tmp_path_factory.mktemp("viz")
    data = root / "data"
    write_synthetic_run(data / "evo" / "big", SyntheticSpec(prompts=1000, attacks=5, responses=4, seeds=2, na_every=7))
    write_synthetic_run(data / "one_turn" / "small", SyntheticSpec(prompts=3, seeds=1, population=False, random_seed=5))
    out = root / "viz.html"
    assert main(["viz", str(data), "-o", str(out)]) == 0
    return data, out


def test_a_large_run_loads_and_shows_the_values_computed_in_python(browser: Any, big_run: tuple[Path, Path]) -> None:
    data, html = big_run
    page.open_viewer(browser, html.as_uri())
    assert page.texts(browser, "#overview-cards .v") == ["evo", "2", "1000", "5000", "20000", "0\u20134 (5 steps)", "rm-small, judge-model"]

    page.click(browser, "tab-explore")
    assert page.headers(browser, "prompts-table") == [
        "Step", "Operation", "System Prompt", "Mean Adv Score", "Std Adv Score", "Num Attacks", "File mean_score", "Hash",
    ]
    files = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in (data / "evo" / "big" / "seed_0").glob("*.json") if len(p.stem) == 32}
    assert len(files) == 500
    assert len(page.rows(browser, "prompts-table")) == 100  # first page
    assert page.texts(browser, "#prompts-table-box .range") == ["1\u2013100 of 500"]

    # sorted by the file's mean_score, highest first, without a click (rm-bias's default order)
    assert page.sort_state(browser, "prompts-table") == ("File mean_score", "sorted-desc")
    top = page.rows(browser, "prompts-table")[0]
    best = max(files, key=lambda h: files[h]["mean_score"])
    assert top["hash"][0] == best
    assert top["mean"] == (page.fmt(files[best]["mean_score"]), repr(files[best]["mean_score"]))
    assert top["std"] == (page.fmt(files[best]["stdev_score"]), repr(files[best]["stdev_score"]))
    assert top["n"][0] == "5" and top["step"][0] == str(files[best]["meta"]["step"])

    # drill down: a prompt with an N/A attack (found through the filter box)
    na_hash = next(h for h, f in sorted(files.items()) if any("adversarial_score" not in a["aux_info"] for a in f["attacks"]))
    browser.execute_script(
        "const f = document.getElementById('prompt-filter'); f.value = arguments[0]; f.dispatchEvent(new Event('input'));", na_hash
    )
    assert [r["hash"][0] for r in page.rows(browser, "prompts-table")] == [na_hash]
    page.click_row(browser, "prompts-table", 0)
    assert page.texts(browser, "#prompt-fulltext pre.sp-text") == [files[na_hash]["system_prompt"]]
    assert page.headers(browser, "attacks-table") == [
        "User Prompt", "Adversarial Score",
        "Mean Raw | rm-small", "Mean Norm | rm-small", "Mean Raw | judge-model", "Mean Norm | judge-model",
    ]
    shown = page.rows(browser, "attacks-table")
    attacks = files[na_hash]["attacks"]
    assert len(shown) == len(attacks) == 5
    saw_na = False
    for row, attack in zip(shown, attacks, strict=True):
        want = expected_attack(attack)
        assert row["u"][0] == want["u"]
        for key in ("adv", "mr0", "mn0", "mr1", "mn1"):
            text, value = row[key]
            assert text == page.fmt(want[key]), key
            if want[key] is None:
                assert value == ""
            else:
                assert math.isclose(float(value or "nan"), want[key], rel_tol=1e-12, abs_tol=1e-15), key
        if want["adv"] is None:
            saw_na = True
            assert row["mn1"][0] == "N/A"  # the judge's normalized scores are missing
            assert "stored" not in attack["aux_info"]
        else:
            assert float(row["adv"][1] or "nan") == attack["aux_info"]["adversarial_score"]  # exactly the file's value
    assert saw_na

    # responses of the N/A attack
    na_index = next(i for i, a in enumerate(attacks) if expected_attack(a)["adv"] is None)
    page.click_row(browser, "attacks-table", na_index)
    fulltext = page.texts(browser, "#attack-fulltext pre")
    assert fulltext[0] == attacks[na_index]["user"]
    assert "N/A (no response has a normalized_score from judge-model)" in fulltext
    assert page.headers(browser, "responses-table") == [
        "Response", "Length", "Raw | rm-small", "Norm | rm-small", "Raw | judge-model", "Norm | judge-model",
    ]
    for row, response in zip(page.rows(browser, "responses-table"), attacks[na_index]["responses"], strict=True):
        rm, judge = response["ratings"]
        assert row["len"][0] == str(len(response["assistant"]))
        assert row["raw0"] == (page.fmt(rm["raw_score"]), repr(rm["raw_score"]))
        assert row["norm0"] == (page.fmt(rm["aux_info"]["normalized_score"]), repr(rm["aux_info"]["normalized_score"]))
        assert row["raw1"] == (page.fmt(judge["raw_score"]), repr(judge["raw_score"]))
        assert row["norm1"] == ("N/A", "")
    page.click_row(browser, "responses-table", 2)
    shown_texts = page.texts(browser, "#response-fulltext pre")
    assert shown_texts[0] == attacks[na_index]["responses"][2]["assistant"]
    assert attacks[na_index]["responses"][2]["ratings"][1]["aux_info"]["reasoning"] in shown_texts

    # analytics: one point per scored system prompt, histogram counts add up, population lines per seed
    page.click(browser, "tab-analytics")
    assert browser.execute_script("return document.querySelectorAll('#scatter-chart g.points > *').length") == 1000
    counts = page.texts(browser, "#hist-chart g.bars rect title")
    assert sum(int(t.split(": ")[1].split(" ")[0]) for t in counts) == 1000
    assert browser.execute_script("return document.querySelectorAll('#population-chart polyline').length") == 6

    # the run picker switches runs
    browser.execute_script("const p = document.getElementById('run-picker'); p.value = '1'; p.dispatchEvent(new Event('change'));")
    assert "No population_history.json in this run" in browser.find_element("id", "population-chart").text
    page.click(browser, "tab-overview")
    assert page.texts(browser, "#ov-prompts .v") == ["3"]
    assert console_errors(browser) == []


XSS = [
    '<img src=x onerror="window.__xss=1">',
    "</script><script>window.__xss=1</script>",
    "<svg onload=window.__xss=1></svg>",
    '"><iframe srcdoc="<script>parent.__xss=1</script>">',
    "<!-- {{DATA}} {{SCRIPT}} -->\u2028",
]


def test_markup_in_the_data_stays_inert_text(browser: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    run = data / "evo" / f"run{XSS[0]}"
    system = "Be helpful. " + XSS[0] + XSS[1]
    responses = [
        {"assistant": XSS[2] + XSS[1], "ratings": [
            rating(XSS[3], 0.5, 1.0, reasoning=XSS[0]),
            rating("judge" + XSS[4], 6, -1.0, "lm_judge", reasoning=XSS[1]),
        ]}
    ]
    prompt = {
        "system_prompt": system,
        "meta": {"step": 1, "operation": XSS[3], "note": XSS[1]},
        "attacks": [{"system": system, "user": XSS[1] + XSS[2], "responses": responses, "aux_info": {"why": XSS[0]}}],
    }
    from pytest_evals import save_population_state, save_system_prompt_stats

    save_system_prompt_stats(run, f"x{XSS[0]}", system, prompt["attacks"], meta=prompt["meta"])
    save_population_state(run, f"x{XSS[0]}", 1, {system: 0})
    out = tmp_path / "viz.html"
    assert main(["viz", str(data), "-o", str(out)]) == 0
    page.open_viewer(browser, out.as_uri())
    page.click(browser, "tab-explore")
    page.click_row(browser, "prompts-table", 0)
    page.click_row(browser, "attacks-table", 0)
    page.click_row(browser, "responses-table", 0)
    page.click(browser, "tab-analytics")
    page.click(browser, "tab-explore")
    page.click_row(browser, "prompts-table", 0)
    page.click_row(browser, "attacks-table", 0)
    page.click_row(browser, "responses-table", 0)
    assert browser.execute_script("return window.__xss") is None
    assert browser.execute_script("return document.querySelectorAll('main img, main iframe, main script, main svg[onload]').length") == 0
    # ... and the payloads are shown, verbatim, as text
    pre = page.texts(browser, "main pre")
    assert system in pre and XSS[1] + XSS[2] in pre and XSS[2] + XSS[1] in pre
    assert XSS[0] in pre and XSS[1] in pre  # both raters' reasoning
    assert f"Raw | {XSS[3]}" in page.headers(browser, "responses-table")
    assert browser.find_element("id", "run-picker").get_property("options")[0].text == f"evo/run{XSS[0]}"
    assert console_errors(browser) == []


def test_na_is_shown_where_the_seed_says(browser: Any, tmp_path: Path) -> None:
    from pytest_evals import save_system_prompt_stats

    run = tmp_path / "data" / "pair" / "r"
    one_rater = {"system": "p", "user": "only one rater", "responses": [{"assistant": "a", "ratings": [rating("rm", 0.5, 1.0)]}]}
    no_norm = attack_dict("p", "no normalized scores", [(0.5, None, 6, None)])
    save_system_prompt_stats(run, 0, "p", [one_rater, no_norm], meta={"step": 0, "operation": "init"})
    save_system_prompt_stats(run, 0, "q", [attack_dict("q", "fine", [(0.5, 2.0, 6, -2.0)])], meta={"step": 1, "operation": "init"})
    # meta without an operation is valid (rm-bias writes meta={}); a step that is not a number is not
    (run / "seed_0" / "broken.json").write_text('{"system_prompt": "x", "meta": {"step": "one"}, "attacks": []}', encoding="utf-8")
    out = tmp_path / "viz.html"
    assert main(["viz", str(tmp_path / "data"), "-o", str(out)]) == 0
    page.open_viewer(browser, out.as_uri())
    issues = browser.find_element("id", "issues").text
    assert "broken.json" in issues and "field 'meta.step'" in issues
    page.click(browser, "tab-explore")
    by_prompt = {r["sp"][0]: r for r in page.rows(browser, "prompts-table")}
    assert by_prompt["p"]["mean"] == ("N/A", "") and by_prompt["p"]["std"] == ("N/A", "")
    assert by_prompt["q"]["mean"][0] == page.fmt(adversariality(2.0, -2.0)) == "1.500"
    order = [r["sp"][0] for r in page.rows(browser, "prompts-table")]
    page.click_row(browser, "prompts-table", order.index("p"))
    rows = page.rows(browser, "attacks-table")
    assert [r["adv"][0] for r in rows] == ["N/A", "N/A"]
    assert page.headers(browser, "attacks-table") == [
        "User Prompt", "Adversarial Score", "Mean Raw | rm", "Mean Norm | rm", "Mean Raw | judge", "Mean Norm | judge",
    ]
    assert rows[0]["mr1"] == ("N/A", "") and rows[1]["mn1"] == ("N/A", "") and rows[1]["mr1"][0] == "6.000"
    page.click_row(browser, "attacks-table", 0)
    assert any("fewer than two ratings" in t for t in page.texts(browser, "#attack-fulltext pre"))
    # rater columns come from the data: this attack was rated by "rm" only
    assert page.headers(browser, "responses-table") == ["Response", "Length", "Raw | rm", "Norm | rm"]
    # N/A sorts last in both directions
    page.click(browser, "tab-explore")
    page.click_header(browser, "prompts-table", "Mean Adv Score")
    assert [r["sp"][0] for r in page.rows(browser, "prompts-table")] == ["q", "p"]
    page.click_header(browser, "prompts-table", "Mean Adv Score")
    assert [r["sp"][0] for r in page.rows(browser, "prompts-table")] == ["q", "p"]
    assert console_errors(browser) == []
