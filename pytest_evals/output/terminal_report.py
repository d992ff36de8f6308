"""The terminal summary: one table per suite, its problems, warnings and missed gates."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_evals.model import value_format as fmt
from pytest_evals.model.metric_value import Metric, walk

if TYPE_CHECKING:
    from pytest_evals.controller.aggregator import Aggregator
    from pytest_evals.controller.suite_verdict import SuiteSummary
    from pytest_evals.model.gate import GateResult


def fmt_metric(metric: Metric) -> tuple[str, str]:
    """(value, interval) texts of a metric, as every output of the run shows them."""
    low, high = metric.ci if metric.ci else (None, None)
    value = fmt.metric_value(metric.value, metric.kind, metric.reason)
    return value, fmt.metric_interval(metric.value, metric.kind, low, high)


def gates_by_metric(gates: list[GateResult]) -> dict[str, list[GateResult]]:
    """Gates keyed by the metric they read (``x.ci_low`` gates belong to ``x``)."""
    return fmt.gates_by_metric(gates)


def suite_rows(s: SuiteSummary, verbose: bool) -> tuple[list[tuple[str, str, str, str, str]], int]:
    """The table rows of a suite and how many nested metrics were left out."""
    by_metric = gates_by_metric(s.gates)
    rows = [("metric", "value", "95% CI", "gate", "result")]
    hidden = 0
    for path, metric in walk(s.metrics):
        if metric.kind == "count" and path.startswith("errors_") and path not in by_metric:
            continue
        if "." in path and path not in by_metric and not verbose:
            # Nested breakdowns (per class, per guardrail, per task) can run to
            # hundreds of rows; the JSON summary and -v show them all.
            hidden += 1
            continue
        value, ci = fmt_metric(metric)
        gate_text, result = fmt.gate_cells(path, by_metric.get(path, []))
        rows.append((path, value, ci, gate_text, result))
    return rows, hidden


def render_terminal(tr: Any, agg: Aggregator) -> None:
    from pytest_evals.regression.regression_plugin import terminal_lines as regression_lines

    tr.write_sep("=", "pytest_evals summary")
    header = (agg.summary or {}).get("llm", {}).get("judge_line")
    if header:
        tr.write_line(header)
    verbose = agg.config.get_verbosity() > 0
    for s in agg.suites:
        c = s.cases
        verdict = "PASSED" if s.passed else "FAILED"
        tr.write_line("")
        tr.write_line(
            f"{s.name} [{s.task}] {s.suite}: {c.total} cases, {c.passed} passed, "
            f"{c.failed} failed, {c.errors} errors, {c.skipped} skipped -> {verdict}",
            bold=True,
            green=s.passed,
            red=not s.passed,
        )
        note = (s.tables or {}).get("judge_note")
        if note:
            tr.write_line(f"  {note}")
        if c.expected is not None and c.received != c.expected:
            tr.write_line(f"  cases collected: {c.expected}, results received: {c.received}", red=True)
        rows, hidden = suite_rows(s, verbose)
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        for row in rows:
            tr.write_line("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if hidden:
            tr.write_line(f"  ({hidden} nested metrics not shown: run with -v or read the JSON summary)")
        for warning in s.warnings:
            tr.write_line(f"  WARNING {s.name}: {warning}", yellow=True)
        for reason in s.reasons:
            if reason.startswith("regression: "):
                continue  # shown with its paired test by the regression lines below
            if reason.startswith("missed gate: "):
                label, reason = "MISSED GATE", reason.removeprefix("missed gate: ")
            else:
                label = "PROBLEM" if reason in s.problems else "FAILED"
            tr.write_line(f"  {label} {s.name}: {reason}", red=True)
        for text, style in regression_lines(s):
            tr.write_line(text, **style)
        if s.generated_path:
            tr.write_line(f"  generated outputs: {s.generated_path}")
    for warning in agg.warnings():
        tr.write_line(f"WARNING: {warning}", yellow=True)
    if agg.exit_note:
        tr.write_line("")
        tr.write_line(agg.exit_note, yellow=True)
    json_path = agg.config.getoption("evals_json", None)
    if json_path:
        tr.write_line(f"JSON summary: {json_path}")
