"""Unit tests of the report building blocks: escaping, details, the store, plots, files."""

from __future__ import annotations

import json
import re

from pytest_evals.model.case_result import CaseResult
from pytest_evals.output.html_templating import environment, script_json
from pytest_evals.reports.case_detail import Trim, build_entry, score_rows, section_of
from pytest_evals.reports.detail_store import DetailStore, decode
from pytest_evals.reports.html_report import scores_text, verdict_text
from pytest_evals.reports.plots import accuracy_charts, confusion_panels, score_values, suite_plots
from pytest_evals.reports.result_files import aggregate_rows, case_rows, folder_name, suite_folders
from pytest_evals.reports.summary_html import counts_line, metrics_table


def leaf(value: float | None, kind: str = "proportion", **extra: object) -> dict[str, object]:
    return {"value": value, "kind": kind, **extra}


def test_script_json_cannot_close_its_element() -> None:
    data = {"q": "</script><script>alert(1)</script><!-- & \u2028"}
    out = script_json(data)
    assert "<" not in out and ">" not in out and "&" not in out
    assert json.loads(out) == data
    # Templates escape every value for element content and quoted attributes.
    page = environment("pytest_evals.reports").from_string('<p title="{{ v }}">{{ v }}</p>').render(v='<img src=x onerror="a">')
    assert page == '<p title="&lt;img src=x onerror=&#34;a&#34;&gt;">&lt;img src=x onerror=&#34;a&#34;&gt;</p>'


def test_sections_group_detail_keys() -> None:
    assert section_of("question") == "Inputs"
    assert section_of("expected-output") == "Expected"
    assert section_of("actual_outcome") == "Actual"
    assert section_of("llm_answer") == "Actual"
    assert section_of("judge_prompt") == "Judge"
    assert section_of("reasoning") == "Judge"
    assert section_of("batch_sizes") == "Other"


def test_trim_cuts_long_text_and_lists_and_counts() -> None:
    trim = Trim(10)
    value = trim.value({"a": "x" * 25, "b": list(range(250)), "c": float("nan")})
    assert value["a"].startswith("x" * 10) and "15 more characters" in value["a"]
    assert len(value["b"]) == 201 and "50 more items" in value["b"][-1]
    assert value["c"] is None
    assert trim.cuts == 2


def test_score_rows_take_thresholds_from_the_case_then_the_suite() -> None:
    result = {
        "scores": {"faithfulness": 0.4, "relevance": 0.9, "coherence": None},
        "data": {"metrics": {"faithfulness": {"threshold": 0.5, "passed": False}}},
    }
    rows = score_rows(result, {"relevance": 0.8})
    assert rows == [["faithfulness", 0.4, 0.5, False], ["relevance", 0.9, 0.8, True], ["coherence", None, None, None]]


def test_entry_levels() -> None:
    result = {
        "case_id": "c1", "suite": "s.eval.yaml", "task": "t", "source": "d.jsonl:1", "status": "passed",
        "scores": {"correct": 1.0},
        "details": {"question": "q" * 1000, "prompt": [{"role": "user", "content": "long " * 100}], "reply": "Yes"},
    }
    full = build_entry(result, level="full", field_chars=50, thresholds={}, nodeid="n")
    sections = dict((name, dict(items)) for name, items in full["sec"])
    assert sections["Inputs"]["question"].startswith("q" * 50) and full["cut"] == 2
    assert sections["Judge"]["reply"] == "Yes"
    summary = build_entry(result, level="summary", field_chars=50, thresholds={}, nodeid="n")
    summarised = dict((name, dict(items)) for name, items in summary["sec"])
    assert len(summarised["Inputs"]["question"]) < 310
    # a chat prompt is previewed by its end (where the item sits, after the instructions)
    assert summarised["Judge"]["prompt"].startswith("[...]")


def test_store_round_trip_plain_and_compressed() -> None:
    small = DetailStore()
    keys = [small.add({"i": i, "t": "<b>"}) for i in range(3)]
    assert keys == [0, 1, 2]
    encoding, payload = small.finish()
    assert encoding == "json-lines" and "<" not in payload
    assert decode(encoding, payload) == [{"i": i, "t": "<b>"} for i in range(3)]

    big = DetailStore(raw_limit=10_000)
    entries = [{"i": i, "prompt": "I want you to act as a judge. " * 20} for i in range(300)]
    for e in entries:
        big.add(e)
    encoding, payload = big.finish()
    assert encoding == "deflate-base64"
    assert decode(encoding, payload) == entries
    assert len(payload) < big.raw_size / 5  # judge prompts repeat: they compress well
    assert 'data-encoding="deflate-base64"' in big.html()


def test_row_texts() -> None:
    assert scores_text({"a": 1.0, "b": 0.12345, "c": None, "d": 2, "e": 3}) == "a 1, b 0.123, c n/a, d 2, +1"
    assert verdict_text({"status": "passed"}) == "pass"
    assert verdict_text({"status": "failed", "message": "first line\nsecond"}) == "fail: first line"
    assert verdict_text({"status": "error", "error_kind": "judge", "message": "x" * 200}).startswith("error [judge]: xxx")


BINARY = {
    "name": "jb",
    "metrics": {"accuracy": leaf(0.8, ci_low=0.5, ci_high=0.9, n=10), "tp": leaf(3, "count"), "fn": leaf(1, "count"),
                "fp": leaf(1, "count"), "tn": leaf(5, "count")},
    "tables": {},
    "gates": [],
}


def test_confusion_panels_binary_multiclass_and_per_task() -> None:
    (panel,) = confusion_panels(BINARY)
    assert panel.matrix == [[3, 1], [1, 5]] and panel.title == "all cases"
    multi = {"metrics": {}, "tables": {"confusion_matrix": {"labels": ["a", "b"], "matrix": [[1, 2], [3, 4]]}}}
    (panel,) = confusion_panels(multi)
    assert panel.labels == ["a", "b"] and panel.matrix == [[1, 2], [3, 4]]
    halueval = {"metrics": {
        "overall": {"confusion": {k: leaf(1, "count") for k in ("tp", "fp", "fn", "tn")}},
        "qa": {"confusion": {k: leaf(2, "count") for k in ("tp", "fp", "fn", "tn")}},
    }}
    assert [p.title for p in confusion_panels(halueval)] == ["overall", "qa"]


def test_accuracy_charts_with_baselines_and_gates() -> None:
    summary = {
        "metrics": {
            "overall": {"accuracy": leaf(0.7, ci_low=0.6, ci_high=0.8)},
            "qa": {"accuracy": leaf(0.6, ci_low=0.5, ci_high=0.7)},
            "dialogue": {"accuracy": leaf(None, reason="0/0")},
            "baselines": {"always_yes": {"overall": {"accuracy": leaf(0.5)}, "qa": {"accuracy": leaf(0.5)}}},
        },
        "gates": [{"metric": "overall.accuracy", "op": "min", "threshold": 0.65}],
    }
    (chart,) = accuracy_charts(summary)
    assert chart.groups == ["overall", "qa", "dialogue"]
    assert chart.series[0].values == [0.7, 0.6, None] and chart.series[0].lows == [0.6, 0.5, None]
    assert chart.series[1].name == "always_yes" and chart.series[1].values == [0.5, 0.5, None]
    assert chart.gates == [(0, 0.65)]


def test_score_values_skip_binary_scores() -> None:
    results = [CaseResult("s", "t", f"c{i}", "x", status="passed", scores={"correct": float(i % 2), "f": i / 10}) for i in range(5)]
    results.append(CaseResult("s", "t", "e", "x", status="error", scores={"f": 0.99}))
    assert score_values(results) == {"f": [0.0, 0.1, 0.2, 0.3, 0.4]}


def test_plots_are_valid_and_deterministic() -> None:
    results = [CaseResult("s", "t", f"c{i}", "x", status="passed", scores={"f": i / 7}) for i in range(7)]
    first = suite_plots(BINARY, results)
    second = suite_plots(BINARY, results)
    assert [p.name for p in first] == ["confusion_matrix", "score_histograms"]
    for a, b in zip(first, second, strict=True):
        assert a.png.startswith(b"\x89PNG") and b"<svg" in a.svg[:1000]
        assert a.svg == b.svg and a.png == b.png


def test_folder_names_stay_inside_the_run_folder() -> None:
    assert folder_name("../../etc") == "etc"
    assert folder_name("a/b\\c") == "a_b_c"
    assert folder_name("..") == "suite"
    assert folder_name("ok-name_1.v2") == "ok-name_1.v2"
    suites = [{"suite": "a/x.eval.yaml", "name": "x"}, {"suite": "b/x.eval.yaml", "name": "x"}, {"suite": "c.eval.yaml", "name": "../c"}]
    assert suite_folders(suites) == {"a/x.eval.yaml": "x", "b/x.eval.yaml": "x-2", "c.eval.yaml": "c"}


def test_case_rows_flatten_data_and_cover_every_column() -> None:
    results = [
        CaseResult("s", "t", "a", "x", scores={"f": 0.5}, data={"metrics": {"f": {"threshold": 0.5}}, "labels": [1, 2]}),
        CaseResult("s", "t", "b", "x", scores={"g": 1.0}, data={"other": None}),
    ]
    header, rows = case_rows(results)
    assert header[:8] == ["suite", "case_id", "index", "source", "status", "error_kind", "message", "duration"]
    assert {"score.f", "score.g", "data.metrics.f.threshold", "data.labels", "data.other"} <= set(header)
    assert rows[0]["data.labels"] == "[1, 2]"


def test_summary_tables_escape_and_carry_exact_values() -> None:
    suite = {
        "metrics": {"accuracy": leaf(2 / 3, ci_low=0.3, ci_high=0.9, n=3), "per_class": {"<i>x</i>": {"recall": leaf(None, reason="0/0: never expected")}}},
        "gates": [{"metric": "accuracy", "op": "min", "threshold": 0.5, "value": 2 / 3, "passed": True}],
        "cases": {"total": 3, "passed": 2, "failed": 1, "errors": 0, "skipped": 0, "errors_by_kind": {}},
    }
    html = metrics_table(suite)
    assert "<i>" not in html and "per_class.&lt;i&gt;x&lt;/i&gt;.recall" in html
    value = re.search(r'data-metric="accuracy".*?data-value="([^"]+)"', html)
    assert value and float(json.loads(value.group(1).replace("&quot;", '"'))) == 2 / 3
    assert "undefined (0/0: never expected)" in html
    assert "&gt;= 0.5" in html and "evals-pass" in html
    assert "1 failed" in counts_line(suite)
    rows = {r["metric"]: r for r in aggregate_rows(suite)}
    assert rows["accuracy"]["gate_passed"] is True and rows["per_class.<i>x</i>.recall"]["value"] is None
