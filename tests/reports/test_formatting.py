"""One walker and one set of formatters: the terminal, the HTML summary, the CSV files
and the Markdown summary show the same numbers for the same metric tree."""

from __future__ import annotations

from pytest_evals.model import value_format as fmt
from pytest_evals.model.gate import GateResult
from pytest_evals.model.metric_value import Metric, count, proportion, tree_to_json, walk
from pytest_evals.output.terminal_report import fmt_metric
from pytest_evals.regression.markdown_summary import render
from pytest_evals.reports.result_files import aggregate_rows
from pytest_evals.reports.summary_html import fmt_ci, fmt_value, metric_rows

TREE = {
    "accuracy": proportion(7, 9, "no cases"),
    "tp": count(4),
    "per_class": {"a": {"recall": proportion(0, 0, "never expected")}, "b": {"f1": Metric(0.5, None, 2, None, "score")}},
    "undefined": Metric(None),
    "raters": {"<i>judge</i>": {"mean": Metric(0.25, (0.1, 0.4), 9, None, "mean")}},
}
GATES = [
    GateResult("accuracy", "min", 0.7, 7 / 9, True),
    GateResult("raters.<i>judge</i>.mean.ci_low", "min", 0.2, 0.1, False),
    GateResult("raters.<i>judge</i>.mean", "max", 0.9, 0.25, True),
]


def test_one_walker_for_typed_and_json_trees() -> None:
    typed = [path for path, _ in walk(TREE)]
    assert typed == [path for path, _ in fmt.walk(tree_to_json(TREE))]
    assert typed == ["accuracy", "tp", "per_class.a.recall", "per_class.b.f1", "undefined", "raters.<i>judge</i>.mean"]
    # non-metric values inside a tree are skipped, as before
    assert list(fmt.walk({"x": 3, "y": {"value": 1, "kind": "count"}})) == [("y", {"value": 1, "kind": "count"})]


def test_terminal_and_html_format_every_leaf_alike() -> None:
    leaves = dict(fmt.walk(tree_to_json(TREE)))
    for path, metric in walk(TREE):
        assert fmt_metric(metric) == (fmt_value(leaves[path]), fmt_ci(leaves[path])), path
    assert fmt_metric(TREE["accuracy"]) == ("0.778", fmt.interval(*TREE["accuracy"].ci))  # type: ignore[misc, union-attr]
    assert fmt_value(leaves["tp"]) == "4" and fmt_ci(leaves["tp"]) == ""
    assert fmt_value(leaves["per_class.a.recall"]) == "undefined (0/0: never expected)"
    assert fmt_value(leaves["undefined"]) == "undefined"


def test_gates_read_the_same_everywhere() -> None:
    by_metric = fmt.gates_by_metric(GATES)
    assert list(by_metric) == ["accuracy", "raters.<i>judge</i>.mean"]
    path = "raters.<i>judge</i>.mean"
    assert fmt.gate_cells(path, by_metric[path]) == ("ci_low >= 0.2, <= 0.9", "FAIL")
    assert fmt.gate_cells(path, by_metric[path], unicode=True) == ("ci_low ≥ 0.2, ≤ 0.9", "FAIL")
    assert fmt.gate_cells("accuracy", by_metric["accuracy"]) == (">= 0.7", "pass")
    assert fmt.gate_cells("tp", []) == ("", "")
    # The same gates as JSON (what the HTML summary, the CSV files and Markdown read).
    suite = {"metrics": tree_to_json(TREE), "gates": [g.to_json() for g in GATES], "name": "s", "task": "t",
             "passed": False, "cases": {"total": 9}}
    top, _nested = metric_rows(suite)
    html_rows = {r["path"]: (r["value_text"], r["ci_text"], r["gate"], r["result"]) for r in top}
    assert html_rows[path] == ("0.250", "[0.100, 0.400]", "ci_low >= 0.2, <= 0.9", "FAIL")
    csv_rows = {r["metric"]: r for r in aggregate_rows(suite)}
    assert csv_rows[path]["gate"] == "raters.<i>judge</i>.mean.ci_low >= 0.2; raters.<i>judge</i>.mean <= 0.9"
    assert csv_rows[path]["gate_passed"] is False
    markdown = render({"passed": False, "suites": [suite]})
    assert "| 0.250 | [0.100, 0.400] | ci\\_low ≥ 0.2, ≤ 0.9 | **FAIL** |" in markdown
    assert GATES[1].describe() == "raters.<i>judge</i>.mean.ci_low = 0.1, required >= 0.2"


def test_regression_numbers() -> None:
    assert fmt.change(0.8, 0.75, -0.05) == "0.8000 → 0.7500 (-0.0500)"
    assert fmt.change(None, 0.75, None) == ""
    assert fmt.signed_interval(-0.07, 0.01) == "[-0.0700, +0.0100]"
    assert fmt.p_value(0.012345) == "0.0123" and fmt.p_value(None) == ""
    assert fmt.margin("max_drop", 0.02) == "max drop 0.02"
