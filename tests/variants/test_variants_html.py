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


SECRET = "sk-test-variant-outputs-4242"


def _chatty(request: dict[str, Any]) -> str:
    """Two models that answer in sentences: markup, the API key, a long tail; m-b
    answers case q01 with a word naming no label."""
    from pytest_evals.testing.fake_openai import last_user_message

    model = str(request.get("model"))
    import re

    i = int(re.search(r"q(\d+)", last_user_message(request)).group(1))  # type: ignore[union-attr]
    if model == "m-b" and i == 1:
        return "maybe"
    answer = "escalate" if (i % 3 == 0) != (model == "m-b" and i == 0) else "answer"
    tail = " tail" * 600 if i == 2 else ""
    return f"{answer} <script>alert('{model}')</script> says {model} with {SECRET}{tail}"


@pytest.mark.parametrize("workers", [None, "2"])
def test_each_variant_output_is_shown_side_by_side(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                   workers: str | None) -> None:
    if workers:
        pytest.importorskip("xdist")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    # a classification task: it reads the label a sentence names
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "jb.jsonl").write_text("".join(
        json.dumps({"id": f"c{i:02d}", "question": f"q{i:02d}: is this a jailbreak?",
                    "expected": "escalate" if i % 3 == 0 else "answer"}) + "\n" for i in range(4)), encoding="utf-8")
    (pytester.path / "jb.eval.yaml").write_text(
        "task: classification\ngenerate: true\ninput_path: data/jb.jsonl\nlabels: [escalate, answer]\npositive_label: escalate\n"
        "target: {model: m-a, system_prompt: Answer yes or no.}\n"
        "variants: [{name: a, model: m-a}, {name: b, model: m-b}]\n", encoding="utf-8")
    with FakeOpenAI(responder=_chatty) as srv:
        args = endpoint(srv, pytester.path, "--evals-variants-html", "v.html", "--evals-json", "s.json",
                        *(["-n", workers] if workers else []))
        result = pytester.runpytest_subprocess(*args) if workers else pytester.runpytest(*args)
    assert result.ret == 1  # m-b's c00 is wrong and its c01 is an error
    summary = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))
    outputs = {c["case_id"]: c["data"].get("variant_output") for c in summary["suites"][0]["case_results"]}
    # the JSON: each case of each variant with the model's own words, secrets masked
    assert outputs["c00[a]"] == "escalate <script>alert('m-a')</script> says m-a with ***"
    assert outputs["c00[b]"] == "answer <script>alert('m-b')</script> says m-b with ***"
    assert outputs["c03[a]"].startswith("escalate ") and outputs["c01[a]"].startswith("answer ")
    long = outputs["c02[a]"]
    # the client masks the key in replies as they arrive: the length is that of the masked reply
    full = len(_chatty({"model": "m-a", "messages": [{"role": "user", "content": "q02"}]}).replace(SECRET, "***"))
    assert long.endswith(f"… ({full:,} characters)") and len(long) < 1100
    assert outputs["c01[b]"] is None  # an erroring case has no output in data (it would feed the aggregates)
    page = (pytester.path / "v.html").read_text(encoding="utf-8")
    assert SECRET not in page and SECRET not in (pytester.path / "s.json").read_text(encoding="utf-8")
    assert "<script>alert(" not in page  # every output is escaped
    rows = {r.split("</td>", 1)[0]: r for r in page.split('<tr class="')[1:] if "<td>c0" in r}
    c00 = next(r for k, r in rows.items() if k.endswith("c00"))
    assert c00.startswith("disagree")
    assert ('<span class="out">escalate &lt;script&gt;alert(&#x27;m-a&#x27;)&lt;/script&gt; says m-a with ***</span>'
            '<span class="lbl">-&gt; escalate</span>') in c00
    assert ('<span class="out">answer &lt;script&gt;alert(&#x27;m-b&#x27;)&lt;/script&gt; says m-b with ***</span>'
            '<span class="lbl">-&gt; answer</span>') in c00
    c01 = next(r for k, r in rows.items() if k.endswith("c01"))
    assert '<td class="error"' in c01 and "replied &#x27;maybe&#x27;, which names none of the labels" in c01
    c02 = next(r for k, r in rows.items() if k.endswith("c02"))
    shown = c02.split('<span class="out">', 2)[1].split("</span>", 1)[0]
    assert shown.endswith("…") and len(shown) <= 401 + 80  # the cell is cut (escaping adds a little)
