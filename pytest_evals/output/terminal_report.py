"""The terminal summary: one table per suite, its problems, warnings and missed gates.

:class:`TerminalReport` is pytest_evals' one terminal reporter (registered on the
controller by plugin.py). It reads the finished run
(:class:`~pytest_evals.controller.run_report.RunReport`) and knows no feature: features
write their lines through ``pytest_evals_terminal_suite`` (under a suite) and
``pytest_evals_terminal_summary`` (after the suites).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_evals.controller.artifact_writers import artifact_problems
from pytest_evals.controller.run_report import get_run_report
from pytest_evals.controller.suite_verdict import ReasonKind
from pytest_evals.controller.xdist_advice import io_bound_advice
from pytest_evals.model import value_format as fmt
from pytest_evals.model.metric_value import Metric, walk

if TYPE_CHECKING:
    from pytest_evals.controller.run_report import RunReport
    from pytest_evals.controller.suite_verdict import SuiteSummary
    from pytest_evals.model.gate import GateResult

#: The label a reason has in the terminal; a kind without one is shown by the feature
#: that gave it (regression reasons, with their paired tests, through
#: ``pytest_evals_terminal_suite``).
REASON_LABELS = {
    ReasonKind.MISSED_GATE: "MISSED GATE",
    ReasonKind.PROBLEM: "PROBLEM",
    ReasonKind.FAILED_CASES: "FAILED",
    ReasonKind.UNCHECKED_GATES: "FAILED",
    ReasonKind.PARTIAL: "PARTIAL",
}


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


class TerminalReport:
    """The run's terminal summary: the suites, then the features' lines."""

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
        report = get_run_report(config)
        if report is not None and report.suites:
            render_terminal(terminalreporter, report)
        config.hook.pytest_evals_terminal_summary(config=config, terminalreporter=terminalreporter)


def render_terminal(tr: pytest.TerminalReporter, report: RunReport) -> None:
    config = report.config
    tr.write_sep("=", "pytest_evals summary")
    header = report.summary.get("llm", {}).get("judge_line")
    if header:
        tr.write_line(header)
    verbose = config.get_verbosity() > 0
    for s in report.suites:
        render_suite(tr, s, verbose)
        config.hook.pytest_evals_terminal_suite(config=config, terminalreporter=tr, suite=s)
        if s.generated_path:
            tr.write_line(f"  generated outputs: {s.generated_path}")
    for warning in report.warnings:
        tr.write_line(f"WARNING: {warning}", yellow=True)
    if report.exit_note:
        tr.write_line("")
        tr.write_line(report.exit_note, yellow=True)
    advice = io_bound_advice(config, report.summary)
    if advice:
        tr.write_line(advice, yellow=True)
    json_path = config.getoption("evals_json", None)
    if json_path and not any(p.artifact == "JSON summary" for p in artifact_problems(config)):
        tr.write_line(f"JSON summary: {json_path}")


def render_suite(tr: pytest.TerminalReporter, s: SuiteSummary, verbose: bool) -> None:
    """A suite's verdict line, its table, warnings and the reasons it fails."""
    c = s.cases
    verdict = s.verdict_word
    xfail = f", {c.xfailed} xfailed, {c.xpassed} xpassed" if c.xfailed or c.xpassed else ""
    tr.write_line("")
    tr.write_line(
        f"{s.name} [{s.task}] {s.suite}: {c.total} cases, {c.passed} passed, "
        f"{c.failed} failed, {c.errors} errors, {c.skipped} skipped{xfail} -> {verdict}",
        bold=True,
        green=verdict == "PASSED",
        yellow=verdict == "PARTIAL",
        red=not s.passed,
    )
    note = (s.tables or {}).get("judge_note")
    if note:
        tr.write_line(f"  {note}")
    if c.expected is not None and c.received != c.expected:
        tr.write_line(f"  cases collected: {c.expected}, results received: {c.received}", red=True)
    if s.partial and s.passed:
        # Allowed by --evals-allow-partial; still said wherever the verdict is shown.
        tr.write_line(
            f"  PARTIAL {s.name}: {c.partial_text()}; the gates cover only those cases",
            yellow=True,
        )
    rows, hidden = suite_rows(s, verbose)
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for row in rows:
        tr.write_line("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    if hidden:
        tr.write_line(f"  ({hidden} nested metrics not shown: run with -v or read the JSON summary)")
    for warning in s.warnings:
        tr.write_line(f"  WARNING {s.name}: {warning}", yellow=True)
    for reason in s.reasons:
        label = REASON_LABELS.get(reason.kind)
        if label is not None:
            tr.write_line(f"  {label} {s.name}: {reason.text}", red=True)
