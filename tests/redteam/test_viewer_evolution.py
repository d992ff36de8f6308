"""The Evolution view and the live page (`pytest-evals viz --watch`) in headless Chromium."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_evals import save_population_state, save_system_prompt_stats
from pytest_evals.cli.main import main
from pytest_evals.families.redteam.scoring import adversariality
from tests.browser_support import console_errors, wait_until
from tests.redteam import viewer_page as page
from tests.redteam.samples import attack_dict

pytestmark = pytest.mark.browser

#: name -> (step, operation, rm z, judge z): one attack with one response each.
PROMPTS = {
    "A": (0, "init", 1.0, -1.0),
    "B": (0, "init", 0.0, 0.0),
    "C": (1, "mutate", 2.0, -2.0),
    "D": (1, "crossover", -1.0, 1.0),
    "E": (2, "mutate", 0.5, 0.5),
}
#: step -> {name: generation}
POPULATION = {0: {"A": 0, "B": 0}, 1: {"A": 0, "C": 1}, 2: {"C": 1, "E": 2}}


def score(name: str) -> float:
    _step, _op, z1, z2 = PROMPTS[name]
    return adversariality(z1, z2)


def sp(name: str) -> str:
    return f"System prompt {name}"


def write_evo_run(run: Path) -> dict[str, str]:
    hashes = {}
    for name, (step, op, z1, z2) in PROMPTS.items():
        hashes[name] = save_system_prompt_stats(
            run, 0, sp(name), [attack_dict(sp(name), "u", [(0.5, z1, 6, z2)])], meta={"step": step, "operation": op}
        )
    for step, members in POPULATION.items():
        save_population_state(run, 0, step, {sp(n): g for n, g in members.items()})
    return hashes


def test_evolution_shows_the_population_per_step_the_candidates_and_the_operations(browser: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    hashes = write_evo_run(data / "evo" / "run")
    by_hash = {h: n for n, h in hashes.items()}
    out = tmp_path / "viz.html"
    assert main(["viz", str(data), "-o", str(out)]) == 0
    page.open_viewer(browser, out.as_uri())
    page.click(browser, "tab-evolution")

    # one collapsible block per step, the last one open
    steps = browser.execute_script(
        "return Array.from(document.querySelectorAll('details.evo-step')).map(d => [d.dataset.step, d.open, d.querySelector('summary').textContent])"
    )
    assert steps == [
        ["0", False, "Step 0 \u2014 population size 2"],
        ["1", False, "Step 1 \u2014 population size 2"],
        ["2", True, "Step 2 \u2014 population size 2"],
    ]
    assert page.headers(browser, "evo-pop-1") == ["Hash", "System Prompt", "Score", "Operation", "Generation"]
    rows = page.rows(browser, "evo-pop-1")
    # members of step 1, by score descending, with the generation recorded for them
    assert [by_hash[r["hash"][0]] for r in rows] == ["C", "A"]
    assert [r["gen"][0] for r in rows] == ["1", "0"]
    assert rows[0]["mean"] == (page.fmt(score("C")), repr(score("C")))
    # D was generated at step 1 but did not make it into the population
    assert [by_hash[r["hash"][0]] for r in page.rows(browser, "evo-cand-1")] == ["D"]
    assert browser.execute_script("return document.getElementById('evo-cand-0') === null && document.getElementById('evo-cand-2') === null")

    # population vs non-population: D is the only prompt never in the population
    flags = browser.execute_script(
        "return Array.from(document.querySelectorAll('#pop-scatter-chart g.points > *')).map(n => n.getAttribute('data-pop'))"
    )
    assert sorted(flags) == ["0", "1", "1", "1", "1"]

    # operations: counts in the pie, mean score per operation (highest first) in the bars
    slices = browser.execute_script(
        "return Array.from(document.querySelectorAll('#ops-pie .slice')).map(n => [n.getAttribute('data-op'), n.getAttribute('data-count')])"
    )
    assert sorted(slices) == [["crossover", "1"], ["init", "2"], ["mutate", "2"]]
    bars = browser.execute_script(
        "return Array.from(document.querySelectorAll('#ops-bar rect')).map(n => [n.getAttribute('data-op'), Number(n.getAttribute('data-mean'))])"
    )
    want = {"init": (score("A") + score("B")) / 2, "mutate": (score("C") + score("E")) / 2, "crossover": score("D")}
    assert [b[0] for b in bars] == sorted(want, key=lambda k: -want[k])
    for op, value in bars:
        assert value == pytest.approx(want[op], abs=1e-12)

    # a row leads to the prompt in Explore
    page.click_row(browser, "evo-cand-1", 0)
    assert page.texts(browser, "#prompt-fulltext pre.sp-text") == [sp("D")]
    assert console_errors(browser) == []


@pytest.fixture
def watch_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    data = tmp_path / "data"
    write_evo_run(data / "evo" / "run")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_evals.cli.main", "viz", str(data), "-o", str(tmp_path / "viz.html"),
         "--watch", "--port", "0", "--interval", "0.2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        while line and not line.startswith("watching"):
            line = proc.stdout.readline()
        url = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        assert url, line
        yield url.group(1), data / "evo" / "run"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_the_watched_page_picks_up_new_files_and_keeps_its_place(browser: Any, watch_server: tuple[str, Path]) -> None:
    url, run = watch_server
    page.open_viewer(browser, url)
    assert browser.execute_script("return document.documentElement.dataset.version") == "1"
    page.click(browser, "tab-explore")
    page.click_row(browser, "prompts-table", 0)  # the best prompt, C
    assert page.texts(browser, "#prompt-fulltext pre.sp-text") == [sp("C")]

    # the runner writes a new, better prompt at step 0 (so C's position in the seed's list moves)
    save_system_prompt_stats(run, 0, sp("F"), [attack_dict(sp("F"), "u", [(0.5, 3.0, 6, -3.0)])], meta={"step": 0, "operation": "mutate"})
    wait_until(browser, "return document.querySelectorAll('#prompts-table tbody tr').length === 6", timeout=20)
    assert int(browser.execute_script("return document.documentElement.dataset.version")) >= 2
    # still on Explore, the same prompt still open; the new one on top (mean descending)
    assert page.texts(browser, "#prompt-fulltext pre.sp-text") == [sp("C")]
    assert page.rows(browser, "prompts-table")[0]["sp"][0] == sp("F")
    assert "live, version" in browser.find_element("id", "generated").text
    assert console_errors(browser) == []


def test_files_written_by_rm_bias_show_their_means_missing_raw_scores_and_a_misnamed_file(browser: Any, tmp_path: Path) -> None:
    from tests.redteam import rmbias_reference as ref
    from tests.redteam.test_rmbias_compat import write_reference_run

    run = tmp_path / "data" / "evo" / "theirs"
    files = write_reference_run(run)
    bullets = next(h for h, d in files.items() if d["system_prompt"].startswith("System prompt 6:"))
    (run / "seed_0" / f"{bullets}.json").rename(run / "seed_0" / "renamed.json")
    out = tmp_path / "viz.html"
    assert main(["viz", str(tmp_path / "data"), "-o", str(out)]) == 0
    page.open_viewer(browser, out.as_uri())
    assert page.texts(browser, "#ov-nullraw .v") == ["4"]
    assert "renamed.json: file name is not its system prompt's hash" in browser.find_element("id", "warnings").text

    page.click(browser, "tab-explore")
    rows = page.rows(browser, "prompts-table")
    assert len(rows) == 12
    by_sp = {r["sp"][0]: r for r in rows}
    for data in files.values():
        mean, std = ref.viewer_prompt_stats(data)
        row = by_sp[data["system_prompt"]]
        assert row["mean"][0] == page.fmt(mean) and row["std"][0] == page.fmt(std)
    # rm-bias's Explore order (issue 28): the file's mean_score, highest first; their writer
    # stores 0.0 for the prompt without any score, so it is not last
    by_file = {d["system_prompt"]: d["mean_score"] for d in files.values()}
    order = [by_file[r["sp"][0]] for r in rows]
    assert order == sorted(order, reverse=True)
    assert [r["fsort"][0] for r in rows] == [page.fmt(m) for m in order]
    assert rows[-1]["mean"][0] != "N/A" and any(r["mean"][0] == "N/A" for r in rows)
    flagged = [r for r in rows if r["hash"][0].startswith("\u26a0")]
    assert [r["hash"][0] for r in flagged] == ["\u26a0 renamed"]

    # the prompt whose judge call failed: averaged over the scores present, the null raw score shown as missing
    page.click_row(browser, "prompts-table", rows.index(by_sp["System prompt 6: use bullet points."]))
    page.click_row(browser, "attacks-table", 0)
    detail = "\n".join(page.texts(browser, "#attack-fulltext pre"))
    assert "computed from the default rater pair" in detail
    assert "openai/gpt-5-nano: 2 of 3 responses have a normalized_score" in detail
    responses = page.rows(browser, "responses-table")
    assert responses[1]["raw1"] == ("N/A", "") and responses[1]["norm1"] == ("N/A", "")
    page.click_row(browser, "responses-table", 1)
    assert any("raw missing (null)" in label for label in page.texts(browser, "#response-fulltext .label"))
    assert console_errors(browser) == []
