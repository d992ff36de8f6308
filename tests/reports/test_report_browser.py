"""The HTML report opened in real headless Chromium, as a reviewer would open it.

One report (three suites: binary, multiclass, judge-scored; XSS payloads throughout the
data), many assertions: the summary shows the JSON summary's numbers, plots render,
rows expand to their details, the case list filters, nothing logs an error and no
payload runs. A second, large report checks the compressed detail store and the
large-run layout (rows for failures only, passes in the case list).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.browser_support import console_errors, wait_until
from tests.reports.project import XSS, XSS_ID, make_project, store_encoding

pytestmark = pytest.mark.browser

SENTINEL = "return window.__xss === undefined"


def _run(pytester: pytest.Pytester, *args: str) -> tuple[Path, dict[str, Any]]:
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--html", "report.html", "--self-contained-html", "--evals-json", "summary.json", *args
    )
    assert (pytester.path / "report.html").exists(), result.stdout.str()
    summary = json.loads((pytester.path / "summary.json").read_text(encoding="utf-8"))
    return pytester.path / "report.html", summary


def _open(browser: Any, page: Path) -> None:
    browser.get(page.as_uri())
    wait_until(browser, "return document.documentElement.getAttribute('data-evals-details') === 'ready'")
    wait_until(browser, "return document.getElementById('evals-cases').getAttribute('data-ready') === '1'")


def _leaves(tree: dict[str, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, node in tree.items():
        path = f"{prefix}{key}"
        if "value" in node and "kind" in node:
            out[path] = node
        else:
            out.update(_leaves(node, path + "."))
    return out


READ_SUMMARY = """
const out = {};
for (const section of document.querySelectorAll('section.evals-suite')) {
  const rows = {};
  for (const tr of section.querySelectorAll('tr[data-metric]')) {
    const v = tr.querySelector('td.evals-v'), ci = tr.querySelector('td.evals-ci');
    rows[tr.dataset.metric] = {value: JSON.parse(v.dataset.value), text: v.textContent,
      low: JSON.parse(ci.dataset.low), high: JSON.parse(ci.dataset.high), ci: ci.textContent};
  }
  const gates = {};
  for (const tr of section.querySelectorAll('tr[data-gate]')) {
    gates[tr.dataset.gate] = {value: JSON.parse(tr.querySelector('td[data-value]').dataset.value),
      result: tr.querySelectorAll('td')[2].textContent};
  }
  const plots = [...section.querySelectorAll('figure.evals-plot img')].map(
    img => ({name: img.closest('figure').dataset.plot, ok: img.complete && img.naturalWidth > 0 && img.naturalHeight > 0}));
  out[section.dataset.suite] = {rows, gates, plots, verdict: section.querySelector('.evals-verdict').textContent,
    counts: section.querySelector('.evals-counts').textContent};
}
return out;
"""


def test_report_in_chromium(pytester: pytest.Pytester, browser: Any) -> None:
    make_project(pytester)
    page, summary = _run(pytester)
    _open(browser, page)
    assert browser.execute_script(SENTINEL), "an XSS payload ran on load"

    # -- the summary shows the JSON summary's numbers -------------------------------------
    shown = browser.execute_script(READ_SUMMARY)
    assert set(shown) == {s["suite"] for s in summary["suites"]}
    for suite in summary["suites"]:
        got = shown[suite["suite"]]
        leaves = _leaves(suite["metrics"])
        assert set(got["rows"]) == set(leaves)
        for path, leaf in leaves.items():
            row = got["rows"][path]
            assert row["value"] == leaf["value"], path
            assert row["low"] == leaf.get("ci_low") and row["high"] == leaf.get("ci_high"), path
            if leaf["value"] is not None and leaf["kind"] != "count":
                assert row["text"] == f"{leaf['value']:.3f}"
            if "ci_low" in leaf and leaf["value"] is not None:
                assert row["ci"] == f"[{leaf['ci_low']:.3f}, {leaf['ci_high']:.3f}]"
        assert {g["metric"]: g["value"] for g in suite["gates"]} == {k: v["value"] for k, v in got["gates"].items()}
        assert got["verdict"] == ("PASSED" if suite["passed"] else "FAILED")
        assert f"{suite['cases']['failed']} failed" in got["counts"]
        # -- plots render -----------------------------------------------------------------
        assert got["plots"] and all(p["ok"] for p in got["plots"]), got["plots"]
    plots = {suite: {p["name"] for p in v["plots"]} for suite, v in shown.items()}
    assert plots["jb.eval.yaml"] == {"confusion_matrix"}
    assert plots["router.eval.yaml"] == {"confusion_matrix"}
    assert plots["scored.eval.yaml"] == {"accuracy", "score_histograms"}
    # The adversarial class label is a metric path and a plot label: text, not markup.
    assert browser.execute_script("return document.querySelector('b[onmouseover]') === null")
    summary_text = browser.execute_script("return document.getElementById('evals-summary').textContent")
    assert "per_class.<b onmouseover=window.__xss=1>label</b>.recall" in summary_text

    # -- pytest-html's table: our columns, escaped ids, failed rows open with details ----
    headers = browser.execute_script("return [...document.querySelectorAll('#results-table-head th')].map(t => t.textContent)")
    for column in ("Suite", "Case", "Task", "Scores", "Verdict"):
        assert column in headers
    xss_row = browser.execute_script(
        "return [...document.querySelectorAll('#results-table td.col-case')].map(td => td.textContent)"
    )
    assert XSS_ID in xss_row
    test_ids = browser.execute_script("return [...document.querySelectorAll('#results-table td.col-testId')].map(td => td.textContent)")
    assert f"test_plain.py::test_plain[{XSS[1]}]" in test_ids
    # Details are drawn as rows scroll into view.
    browser.execute_script("document.getElementById('results-table').scrollIntoView()")
    wait_until(browser, "return document.querySelectorAll('#results-table tbody.failed .evals-detail').length > 0")
    failed_detail = browser.execute_script(
        "return [...document.querySelectorAll('#results-table tbody.failed .evals-detail')].map(d => d.textContent).join('\\n')"
    )
    assert XSS[1] in failed_detail  # jb-2's question, shown as text

    # -- a passed row expands to its inputs, answer, judge prompt/reply/reasoning, scores --
    browser.execute_script(
        "const td = [...document.querySelectorAll('#results-table td.col-case')].find(t => t.textContent === 'sc-0008');"
        "td.closest('tbody').querySelector('.col-result').click();"
    )
    browser.execute_script(
        "[...document.querySelectorAll('#results-table td.col-case')].find(t => t.textContent === 'sc-0008').scrollIntoView()"
    )
    wait_until(
        browser,
        "const td = [...document.querySelectorAll('#results-table td.col-case')].find(t => t.textContent === 'sc-0008');"
        "return td && td.closest('tbody').querySelector('.evals-detail') !== null",
    )
    detail = browser.execute_script(
        "const td = [...document.querySelectorAll('#results-table td.col-case')].find(t => t.textContent === 'sc-0008');"
        "return td.closest('tbody').querySelector('.evals-detail').innerText"
    )
    for text in ("Inputs", "question 8", "answer 8", "Judge", "judge_prompt", "You judge faithfulness.", "judge_reply",
                 "reasoning 8", "faithfulness", "0.960", "0.500", "pass"):
        assert text in detail, text

    # -- every detail rendered (show all), case list filtered and searched: still inert -----
    browser.find_element("id", "show_all_details").click()
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
    wait_until(browser, "return document.querySelectorAll('#results-table .evals-detail').length >= 3")
    cases = browser.find_element("id", "evals-cases")
    assert cases.get_attribute("open") is None  # every case has a row: the list is folded
    cases.find_element("css selector", "summary").click()
    select = cases.find_element("css selector", "select")
    select.find_element("css selector", "option[value='failed']").click()
    failed = sum(s["cases"]["failed"] for s in summary["suites"])
    wait_until(browser, f"return document.querySelectorAll('#evals-cases tr.evals-case').length === {failed}")
    browser.execute_script(
        "const sel = document.querySelector('#evals-cases select'); sel.value = '';"
        "sel.dispatchEvent(new Event('change'));"
        "const s = document.querySelector('#evals-cases input'); s.value = 'judge-error';"
        "s.dispatchEvent(new Event('input'));"
    )
    wait_until(browser, "return document.querySelectorAll('#evals-cases tr.evals-case').length === 1")
    browser.execute_script("document.querySelector('#evals-cases tr.evals-case').click()")
    error_detail = browser.execute_script("return document.querySelector('#evals-cases .evals-detail').innerText")
    assert "ERROR [judge error]" in error_detail and "not json " + XSS[0] in error_detail
    assert browser.execute_script(SENTINEL), "an XSS payload ran"
    assert browser.execute_script("return document.querySelectorAll('#results-table script, #evals-summary script').length") == 0
    assert console_errors(browser) == []


def test_large_report_in_chromium(pytester: pytest.Pytester, browser: Any) -> None:
    """Over evals_html_max_rows: rows for failures only, compressed store, counts shown."""
    make_project(pytester, scored_cases=400, long_text=3000)
    page, summary = _run(pytester, "-o", "evals_html_max_rows=100")
    text = page.read_text(encoding="utf-8")
    assert store_encoding(text) == "deflate-base64"
    _open(browser, page)
    total = sum(s["cases"]["total"] for s in summary["suites"])
    bad = sum(s["cases"]["failed"] + s["cases"]["errors"] for s in summary["suites"])
    rows = browser.execute_script("return document.querySelectorAll('#results-table td[data-k]').length")
    assert rows == min(bad, 100)
    assert browser.execute_script("return document.querySelectorAll('#results-table tbody.passed td[data-k]').length") == 0
    assert browser.execute_script("return document.getElementById('evals-cases').dataset.count") == str(total)
    passed = sum(s["cases"]["passed"] for s in summary["suites"])
    label = browser.execute_script("return document.querySelector('.filters span.passed').textContent")
    assert label.startswith(f"{passed + 1} Passed ({passed} only in the case list)")  # + test_plain
    left_out = total - min(bad, 100)
    run_count = browser.execute_script("return document.querySelector('.run-count').textContent")
    assert f"{left_out} more case(s) are only in the case list." in run_count
    # A summarised pass opens from the case list; its inputs are cut short.
    browser.execute_script(
        "const s = document.querySelector('#evals-cases input'); s.value = 'sc-0008'; s.dispatchEvent(new Event('input'));"
    )
    wait_until(browser, "return document.querySelectorAll('#evals-cases tr.evals-case').length === 1")
    browser.execute_script("document.querySelector('#evals-cases tr.evals-case').click()")
    detail = browser.execute_script("return document.querySelector('#evals-cases .evals-detail').innerText")
    assert "Summarised detail" in detail and "question 8" in detail
    browser.execute_script("document.getElementById('results-table').scrollIntoView()")
    wait_until(browser, "return document.querySelectorAll('#results-table .evals-detail').length > 0")
    assert browser.execute_script(SENTINEL)
    assert console_errors(browser) == []
