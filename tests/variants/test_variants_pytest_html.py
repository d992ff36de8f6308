"""The variant matrix inside pytest-html's --html report, plain and under -n 2."""

from __future__ import annotations

import html
import json

import pytest
from variant_helpers import THREE, endpoint, write_suite

from pytest_evals.output.variant_tables import best_text, comparison_text, matrix_rows
from pytest_evals.testing.fake_openai import FakeOpenAI

pytest.importorskip("pytest_html")


@pytest.mark.parametrize("workers", [None, "2"])
def test_pytest_html_report_holds_the_variant_matrix(pytester: pytest.Pytester, server: FakeOpenAI,
                                                      workers: str | None) -> None:
    if workers:
        pytest.importorskip("xdist")
    variants = [{**THREE[0], "better_than": {"variant": "bad", "metric": "accuracy"}}, THREE[1], THREE[2]]
    write_suite(pytester.path, variants=variants, thresholds={"accuracy": {"min": 0.5}})
    write_suite(pytester.path, name="plain", n=3)  # a suite without variants: nothing of it in the section
    args = endpoint(server, pytester.path, "--html", "report.html", "--evals-json", "s.json",
                    *(["-n", workers] if workers else []))
    result = pytester.runpytest_subprocess(*args) if workers else pytester.runpytest(*args)
    assert result.ret == 1  # bad misses its threshold
    page = (pytester.path / "report.html").read_text(encoding="utf-8")
    suite = next(s for s in json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))["suites"]
                 if s["name"] == "jb")
    assert page.count('<div class="evals-variants">') == 1
    section = page.split('<div class="evals-variants">', 1)[1].split("</div>", 1)[0]
    assert "<h3>jb <small>[jailbreak_guardrails] reference good: FAILED</small></h3>" in section
    assert section.count("<h3>") == 1  # the suite without variants has no matrix
    # the matrix: a row per metric, a column per variant, each value with its interval
    rows = matrix_rows(suite)
    assert rows[0] == ["metric", "good (ref)", "mid", "bad"]
    header = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    assert header in section
    accuracy = next(r for r in rows if r[0] == "accuracy")
    assert accuracy[1:] == ["0.933 [0.779, 0.992]", "0.733 [0.541, 0.877]", "0.433 [0.255, 0.626]"]
    assert "<tr><th>accuracy</th>" + "".join(f'<td class="num">{c}</td>' for c in accuracy[1:]) + "</tr>" in section
    # every paired verdict, the best variant and the variant gate, worded as in the terminal
    block = suite["variants"]
    assert len(block["comparisons"]) == 10
    for c in block["comparisons"]:
        assert html.escape(comparison_text(c)) in section
    assert any(c["verdict"] == "worse" for c in block["comparisons"])
    for b in block["best"]:
        assert html.escape(best_text(b, block["alpha"])) in section
    assert f"BETTER {html.escape(block['gates'][0]['text'])}" in section
    assert "missed gate: variant bad: accuracy = 0.4333, required &gt;= 0.7" not in section  # threshold is 0.5
    assert "missed gate: variant bad: accuracy = 0.4333, required &gt;= 0.5" in section
