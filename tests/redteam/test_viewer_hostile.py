"""Hostile system prompts, user prompts and replies: a red-team suite run by pytest (plain
and ``-n 2``) writes them, ``pytest-evals viz`` renders them through the autoescaped
template, and in Chromium nothing runs (no alert, no ``window.__xss``, no injected
element) while each string reads back literally.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.cli.main import main
from pytest_evals.families.redteam.viewer import render_html
from tests.browser_support import console_errors
from tests.redteam import rt_fixtures as fx
from tests.redteam import viewer_page as page
from tests.redteam.test_task import server  # noqa: F401  (the loopback policy and judge)
from tests.reports.test_report_hostile import alert_trap

pytestmark = pytest.mark.browser

ALERT = "<script>alert(1)</script>"
BREAKOUT = '"><img src="x" onerror="window.__xss=1">'
CLOSE = "</script><script>alert(2)</script>"
COMMENT = "<!-- {{ data }} <svg onload=alert(3)>"
SYSTEMS = [f"Be helpful {ALERT}", f"Flatter the user {BREAKOUT}"]
USERS = [f"How do I boil an egg? {CLOSE}", f"What is a mortgage? {COMMENT}"]

SUITE = """
task: redteam
input_path: attacks.jsonl
n_responses: 1
raters:
  - name: rm
    type: classifier
    callable: "rt_targets:reward"
    stats: {mean: 1.0, stdev: 0.5}
  - name: judge
    type: lm_judge
    stats: {mean: 6.0, stdev: 2.0}
adversarial_threshold: 100.0
output_dir: out
runner: bon_iter
run_name: hostile
"""

INJECTED = "return document.querySelectorAll('main img, main iframe, main script, svg[onload], img[onerror]').length"


def _write(pytester: pytest.Pytester) -> None:
    cases = [
        {"id": f"c{i}-{j}", "system_prompt": system, "user_prompt": user, "seed_id": 0, "step": j, "operation": ALERT}
        for i, system in enumerate(SYSTEMS)
        for j, user in enumerate(USERS)
    ]
    (pytester.path / "attacks.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    pytester.makepyfile(rt_targets=Path(fx.__file__).read_text(encoding="utf-8"))
    (pytester.path / "rt.eval.yaml").write_text(SUITE, encoding="utf-8")


@pytest.mark.usefixtures("server")
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_hostile_attacks_stay_text_in_the_viewer(pytester: pytest.Pytester, browser: Any, workers: list[str]) -> None:
    _write(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *workers)
    result.assert_outcomes(passed=len(SYSTEMS) * len(USERS))
    viz = pytester.path / "viz.html"
    assert main(["viz", str(pytester.path / "out"), "-o", str(viz)]) == 0
    html = viz.read_text(encoding="utf-8")
    for raw in (ALERT, BREAKOUT, CLOSE, COMMENT):
        assert raw not in html, raw

    with alert_trap(browser):
        page.open_viewer(browser, viz.as_uri())
        page.click(browser, "tab-explore")
        shown: list[str] = []
        for p in range(len(SYSTEMS)):
            page.click_row(browser, "prompts-table", p)
            for a in range(len(USERS)):
                page.click_row(browser, "attacks-table", a)
                page.click_row(browser, "responses-table", 0)
                shown += page.texts(browser, "main pre")
        page.click(browser, "tab-analytics")
        page.click(browser, "tab-overview")
        assert browser.execute_script("return window.__alerts") == []
        assert browser.execute_script("return window.__xss") is None
        assert browser.execute_script(INJECTED) == 0
    for system in SYSTEMS:
        assert system in shown, system
    for user in USERS:
        assert user in shown and fx.policy_text("", user, 0) in shown, user
    assert console_errors(browser) == []


def test_a_hostile_title_is_text(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "viz.html"
    title = f"runs {ALERT}{BREAKOUT}</title>{CLOSE}"
    out.write_text(render_html({"runs": []}, title=title), encoding="utf-8")
    with alert_trap(browser):
        browser.get(out.as_uri())
        assert browser.execute_script("return window.__alerts") == []
        assert browser.execute_script("return window.__xss") is None
        assert browser.title == title
        assert browser.find_element("css selector", "header h1").text == title
    assert browser.execute_script(INJECTED) == 0
