"""Hostile strings in every place a suite controls, through the templates, into Chromium.

Case ids, model outputs, per-case score names, metric names (groups of the aggregate
tree, gated so they reach the top table and the gate table) and the suite's name carry
``<script>alert(1)</script>``, an attribute breakout, ``</script><script>`` and an
opened comment. In the real browser nothing runs (no alert, no ``window.__xss``, no
injected element) and each string reads back literally where it belongs; plain and
under ``-n 2``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.browser_support import console_errors, wait_until

pytestmark = pytest.mark.browser

ALERT = "<script>alert(1)</script>"
BREAKOUT = '"><img/src="x"/onerror=window.__xss=1>'
CLOSE = "</script><script>window.__xss=1</script>"
COMMENT = "<!--<svg/onload=alert(2)>"
HOSTILE = (ALERT, BREAKOUT, CLOSE, COMMENT)
SUITE_NAME = 'suite"><svg/onload=alert(3)>'

CONFTEST = """
from pytest_evals.model.metric_value import proportion
from pytest_evals.tasks import register_task
from pytest_evals.tasks.task_contract import Task

SCORE = {score!r}


class HostileProbe(Task):
    name = "hostile_probe"

    def validate_case(self, data, ref):
        return data

    async def evaluate(self, case, ref, ctx):
        result = self.new_result(ref)
        result.scores = {{SCORE: case["score"]}}
        result.data = {{"group": case["group"], "correct": case["score"] >= 0.5}}
        result.details = {{"question": case["question"], "llm_answer": case["answer"]}}
        if case["score"] < 0.5:
            result.status = "failed"
            result.message = "low score for " + case["answer"]
        return result

    def aggregate(self, results):
        groups = sorted({{r.data["group"] for r in results}})
        tree = {{"accuracy": proportion(sum(r.data["correct"] for r in results), len(results), "no cases")}}
        tree["per_group"] = {{
            g: {{"accuracy": proportion(sum(r.data["correct"] for r in results if r.data["group"] == g),
                                        sum(1 for r in results if r.data["group"] == g), "no cases")}}
            for g in groups
        }}
        return tree, {{}}


register_task("hostile_probe", HostileProbe)
"""

#: The browser's alert, confirm and prompt, recorded instead of shown (a shown alert
#: would only surface as a WebDriver error on the next command).
_TRAP = "window.__alerts = []; for (const f of ['alert', 'confirm', 'prompt']) window[f] = m => { window.__alerts.push(String(m)); };"


@contextmanager
def alert_trap(browser: Any) -> Iterator[None]:
    added = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": _TRAP})
    try:
        yield
    finally:
        browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": added["identifier"]})


def _project(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST.format(score=ALERT))
    cases = [
        {"id": case_id, "group": HOSTILE[(i + 1) % len(HOSTILE)], "score": 0.25 if i % 2 else 0.75,
         "question": f"q{i} {HOSTILE[(i + 2) % len(HOSTILE)]}", "answer": f"a{i} {HOSTILE[(i + 3) % len(HOSTILE)]}"}
        for i, case_id in enumerate(HOSTILE)
    ]
    (pytester.path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    # JSON is YAML: every hostile key and value goes in quoted exactly.
    suite = {
        "name": SUITE_NAME,
        "task": "hostile_probe",
        "input_path": "cases.jsonl",
        # The ALERT group's one case fails: accuracy 0, within its gate.
        "thresholds": {"accuracy": {"min": 0.1}, "per_group": {ALERT: {"accuracy": {"max": 0.5}}}},
    }
    (pytester.path / "hostile.eval.yaml").write_text(json.dumps(suite), encoding="utf-8")


READ_PAGE = """
const text = sel => [...document.querySelectorAll(sel)].map(e => e.textContent);
return {
  alerts: window.__alerts, xss: window.__xss === undefined ? null : window.__xss,
  injected: document.querySelectorAll('img[onerror], img[src="x"], svg[onload], #evals-summary script, #results-table script, #evals-cases script').length,
  metrics: [...document.querySelectorAll('tr[data-metric]')].map(tr => [tr.dataset.metric, tr.querySelector('th').textContent]),
  gates: [...document.querySelectorAll('tr[data-gate]')].map(tr => tr.dataset.gate),
  suite: document.querySelector('section.evals-suite').dataset.suite,
  heading: document.querySelector('section.evals-suite h3').textContent,
  toc: text('ul.evals-toc a'),
  caseCells: text('#results-table td.col-case'),
  scoreCells: text('#results-table td.col-scores'),
  verdictCells: text('#results-table td.col-verdict'),
};
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_hostile_strings_stay_text(pytester: pytest.Pytester, browser: Any, workers: list[str]) -> None:
    _project(pytester)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--html", "report.html", "--self-contained-html", "--evals-json", "summary.json", *workers
    )
    page = pytester.path / "report.html"
    assert page.exists(), result.stdout.str()
    # The gate on the hostile metric shows in the terminal as text.
    result.stdout.fnmatch_lines([f"*per_group.{ALERT}.accuracy*<= 0.5*pass*"])
    html = page.read_text(encoding="utf-8")
    for raw in (*HOSTILE, SUITE_NAME):
        assert raw not in html, raw
    store = re.search(r'id="evals-case-data"[^>]*>(.*?)</script>', html, re.S)
    assert store and "<" not in store.group(1)

    with alert_trap(browser):
        browser.get(page.as_uri())
        wait_until(browser, "return document.documentElement.getAttribute('data-evals-details') === 'ready'")
        wait_until(browser, "return document.getElementById('evals-cases').getAttribute('data-ready') === '1'")
        shown = browser.execute_script(READ_PAGE)
        assert shown["alerts"] == [] and shown["xss"] is None and shown["injected"] == 0, shown
        # Metric names, the gate on one, the suite's name and id: literal text.
        paths = {f"per_group.{g}.accuracy" for g in HOSTILE}
        assert paths <= {m for m, _ in shown["metrics"]}
        assert all(m == th for m, th in shown["metrics"])
        assert f"per_group.{ALERT}.accuracy" in shown["gates"]
        assert SUITE_NAME in shown["heading"] and shown["toc"] == [SUITE_NAME]
        assert shown["suite"] == "hostile.eval.yaml"
        # Case ids, the score name and the failure messages in pytest-html's table.
        assert set(HOSTILE) <= set(shown["caseCells"])
        assert any(cell.startswith(f"{ALERT} ") for cell in shown["scoreCells"])
        assert any("low score for a1 " in v for v in shown["verdictCells"])
        # A case opened from the case list shows its hostile inputs and output as text.
        browser.find_element("css selector", "#evals-cases summary").click()
        browser.execute_script(
            "const s = document.querySelector('#evals-cases input'); s.value = arguments[0]; s.dispatchEvent(new Event('input'));",
            CLOSE,
        )
        # The search also matches the verdict of the case whose answer holds the string.
        wait_until(browser, "return document.querySelectorAll('#evals-cases tr.evals-case').length === 2")
        browser.execute_script(
            "[...document.querySelectorAll('#evals-cases tr.evals-case')]"
            ".find(tr => tr.children[2].textContent === arguments[0]).click()",
            CLOSE,
        )
        detail = browser.execute_script("return document.querySelector('#evals-cases .evals-detail').innerText")
        index = HOSTILE.index(CLOSE)
        assert CLOSE in detail
        assert f"q{index} {HOSTILE[(index + 2) % len(HOSTILE)]}" in detail
        assert f"a{index} {HOSTILE[(index + 3) % len(HOSTILE)]}" in detail
        # Every detail of the table drawn: still nothing ran.
        browser.find_element("id", "show_all_details").click()
        browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        wait_until(browser, "return document.querySelectorAll('#results-table .evals-detail').length >= 4")
        after = browser.execute_script(READ_PAGE)
        assert after["alerts"] == [] and after["xss"] is None and after["injected"] == 0, after
    assert console_errors(browser) == []


def test_same_summary_plain_and_xdist(pytester: pytest.Pytester) -> None:
    """The escaped summary section is byte-identical whichever process wrote the cases."""
    _project(pytester)
    pages = []
    for workers in ([], ["-n", "2"]):
        pytester.runpytest_subprocess("-p", "no:cacheprovider", "--html", "r.html", "--self-contained-html", *workers)
        html = (pytester.path / "r.html").read_text(encoding="utf-8")
        pages.append(re.search(r"<div id=evals-summary.*?</section></div>", html, re.S).group(0))  # type: ignore[union-attr]
    assert pages[0] == pages[1]
    assert "per_group.&lt;script&gt;alert(1)&lt;/script&gt;.accuracy" in pages[0]
