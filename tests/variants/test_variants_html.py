"""The HTML matrix: every case with every variant's outcome side by side, filterable to
the cases where the variants disagree; readable and fast at 1,000 cases x 3 variants."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from variant_helpers import N_CASES, THREE, WRONG, endpoint, write_suite

from pytest_evals.model.case_result import CaseResult
from pytest_evals.reports.variant_matrix_html import render_page
from pytest_evals.testing.fake_openai import FakeOpenAI
from tests.browser_support import console_errors, wait_until


def _visible_rows(browser: Any) -> int:
    return int(wait_until(browser, "return Array.from(document.querySelectorAll('table.cases tbody tr'))"
                                   ".filter(r => r.offsetParent !== null).length + 0.5") - 0.5)


@pytest.mark.browser
def test_matrix_page_of_a_run(pytester: pytest.Pytester, server: FakeOpenAI, browser: Any) -> None:
    write_suite(pytester.path, variants=THREE, thresholds={"accuracy": {"min": 0.1}})
    result = pytester.runpytest(*endpoint(server, pytester.path, "--evals-variants-html", "v.html",
                                          "--evals-report-dir", "runs", "--evals-json", "s.json"))
    result.stdout.fnmatch_lines(["*variants HTML: v.html*"])
    run_dir = next((pytester.path / "runs").iterdir())
    assert (run_dir / "jb" / "variants.html").is_file()
    # cases where the three models do not all give the same answer
    disagree = sum(1 for i in range(N_CASES) if len({i in w for w in WRONG.values()}) > 1)
    browser.get((pytester.path / "v.html").as_uri())
    wait_until(browser, "return document.readyState === 'complete'")
    assert _visible_rows(browser) == N_CASES
    header = [th.text for th in browser.find_elements("css selector", "table.cases thead th")]
    assert header == ["case", "expected", "good (ref)", "mid", "bad"]
    first = [td.text for td in browser.find_elements("css selector", "table.cases tbody tr:first-child td")]
    assert first[0] == "c00" and first[2].startswith("FAILED") and first[4].startswith("FAILED")
    browser.find_element("css selector", "input.only").click()
    assert _visible_rows(browser) == disagree
    assert browser.find_element("css selector", ".count").text == f"{disagree} of {N_CASES} cases shown"
    box = browser.find_element("css selector", "input.find")
    box.send_keys("c1")
    expected_hits = sum(1 for i in range(10, 20) if len({i in w for w in WRONG.values()}) > 1)
    assert _visible_rows(browser) == expected_hits
    matrix = browser.find_element("css selector", "table.matrix").text
    assert "accuracy 0.933 [0.779, 0.992] 0.733 [0.541, 0.877] 0.433 [0.255, 0.626]" in matrix
    assert "bad vs good accuracy" in browser.find_element("css selector", "ul.cmp").text
    assert console_errors(browser) == []


def _big_suite(n: int) -> tuple[dict[str, Any], list[CaseResult]]:
    names = ["mini", "big", "local"]
    results = []
    for i in range(n):
        for k, v in enumerate(names):
            right = (i + 2 * k) % 7 != 0
            results.append(CaseResult(
                suite="s.eval.yaml", task="t", case_id=f"case-{i:04d}[{v}]", source=f"d.jsonl:{i + 1}", index=i,
                status="passed" if right else "failed", scores={"correct": float(right)},
                data={"expected": i % 2 == 0, "actual": (i % 2 == 0) == right},
                message=None if right else f"case-{i:04d} answered wrongly by {v}: " + "long reason " * 20,
            ))
    metric = {"value": 0.8, "kind": "proportion", "ci_low": 0.77, "ci_high": 0.83, "n": n}
    suite = {
        "suite": "s.eval.yaml", "name": "s", "task": "t", "passed": True, "reasons": [],
        "metrics": {v: {"accuracy": metric} for v in names}, "gates": [],
        "variants": {"reference": "mini", "names": names, "alpha": 0.05, "compared_metrics": ["accuracy"],
                     "variants": {v: {"cases": {"total": n}, "usage": {}} for v in names},
                     "comparisons": [], "best": [{"metric": "accuracy", "best": None, "verdict": "no significant difference"}],
                     "gates": []},
    }
    return suite, results


@pytest.mark.browser
def test_thousand_cases_by_three_variants_load_fast_and_read_well(browser: Any, tmp_path: Path) -> None:
    suite, results = _big_suite(1000)
    page = tmp_path / "variants.html"
    page.write_text(render_page([(suite, results)]), encoding="utf-8")
    assert page.stat().st_size < 3_000_000
    started = time.perf_counter()
    browser.get(page.as_uri())
    wait_until(browser, "return document.readyState === 'complete' && document.querySelector('.count').textContent")
    loaded = time.perf_counter() - started
    assert loaded < 5.0, loaded
    assert _visible_rows(browser) == 1000
    browser.find_element("css selector", "input.only").click()
    disagree = sum(1 for i in range(1000) if len({(i + 2 * k) % 7 != 0 for k in range(3)}) > 1)
    assert _visible_rows(browser) == disagree
    # readable: cells keep a legible size and the header stays put while scrolling
    size = browser.execute_script(
        "return parseFloat(getComputedStyle(document.querySelector('table.cases td')).fontSize)")
    assert size >= 12
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight / 2)")
    shot = tmp_path / "variants.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    assert console_errors(browser) == []
    print(json.dumps({"load_s": round(loaded, 3), "bytes": page.stat().st_size, "disagree": disagree}))
