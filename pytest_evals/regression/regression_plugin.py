"""Wiring of regression gates: options, the baseline on a StashKey, per-suite checks
(``pytest_evals_suite_verdict``), terminal lines (``pytest_evals_terminal_suite``,
``pytest_evals_terminal_summary``) and the Markdown summary."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.controller.suite_verdict import Reason, ReasonKind
from pytest_evals.model.errors import SuiteConfigError
from pytest_evals.regression.baseline_run import Baseline, BaselineError, load_baseline
from pytest_evals.regression.drop_gates import DEFAULT_ALPHA, parse_regression_gates

if TYPE_CHECKING:
    from pytest_evals.controller.suite_verdict import SuiteSummary
    from pytest_evals.model.case_result import CaseResult
    from pytest_evals.regression.case_pairing import SuiteComparison
    from pytest_evals.tasks.task_contract import Task

BASELINE_KEY = pytest.StashKey["Baseline | BaselineError | None"]()
MARKDOWN_KEY = pytest.StashKey[list[str]]()
#: Each suite's comparison with the baseline as objects, by suite id, for the terminal
#: (the JSON summary holds the same as its ``baseline`` section).
COMPARISONS_KEY = pytest.StashKey[dict[str, "SuiteComparison"]]()
#: Flipped cases the terminal lists per suite and direction (all are in JSON/HTML).
TERMINAL_FLIPS = 10


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evals")
    group.addoption("--evals-baseline", metavar="PATH",
                    help="compare with an earlier run: its --evals-report-dir folder, results.jsonl "
                    "or --evals-json summary (cases paired by suite and case id)")
    group.addoption("--evals-baseline-required", action="store_true", default=None,
                    help="fail max_drop/max_rise gates when there is no baseline (default: skipped)")
    group.addoption("--evals-alpha", type=float, metavar="A",
                    help="significance level of max_drop/max_rise gates (default 0.05; a gate's own alpha wins)")
    group.addoption("--evals-markdown", metavar="PATH",
                    help="write a GitHub-flavoured Markdown summary (verdicts, gates, regressions, flipped cases)")
    group.addoption("--no-evals-step-summary", dest="evals_step_summary", action="store_false", default=None,
                    help="do not append the Markdown summary to $GITHUB_STEP_SUMMARY")
    parser.addini("evals_baseline", "default for --evals-baseline", default="")
    parser.addini("evals_alpha", "default significance level of regression gates (0.05)", default="")
    parser.addini("evals_baseline_required", "fail regression gates without a baseline", type="bool", default=False)
    parser.addini("evals_step_summary", "append the Markdown summary to $GITHUB_STEP_SUMMARY when set",
                  type="bool", default=True)


def _alpha(config: pytest.Config) -> float:
    value = config.getoption("evals_alpha", None)
    if value is None:
        raw = str(config.getini("evals_alpha") or "").strip()
        try:
            value = float(raw) if raw else DEFAULT_ALPHA
        except ValueError:
            raise pytest.UsageError(f"ini evals_alpha: expected a number, got {raw!r}") from None
    if not 0 < value < 1:
        raise pytest.UsageError(f"--evals-alpha must be between 0 and 1, got {value:g}")
    return float(value)


def pytest_configure(config: pytest.Config) -> None:
    _alpha(config)  # a bad value is a usage error now, not at the end of a long run


def baseline_path(config: pytest.Config) -> str | None:
    path = config.getoption("evals_baseline", None) or str(config.getini("evals_baseline") or "")
    return path or None


def get_baseline(config: pytest.Config) -> Baseline | BaselineError | None:
    """The baseline of this run (read once), the error reading it, or None without one."""
    if BASELINE_KEY in config.stash:
        return config.stash[BASELINE_KEY]
    path = baseline_path(config)
    loaded: Baseline | BaselineError | None = None
    if path is not None:
        p = Path(path)
        if not p.is_absolute():
            p = config.invocation_params.dir / p
        if not p.exists():
            loaded = None
        else:
            try:
                loaded = load_baseline(p)
            except BaselineError as exc:
                loaded = exc
    config.stash[BASELINE_KEY] = loaded
    return loaded


def required(config: pytest.Config) -> bool:
    opt = config.getoption("evals_baseline_required", None)
    return bool(opt) if opt is not None else bool(config.getini("evals_baseline_required"))


def case_results(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """What a later run needs to pair with this one (the summary's ``case_results``)."""
    return [
        {"case_id": r.case_id, "status": r.status, "scores": r.scores, "data": r.data, "message": r.message}
        for r in results
        if r.case_id != "suite-error"
    ]


def pytest_evals_suite_verdict(config: pytest.Config, suite: SuiteSummary, task: Task[Any], results: Sequence[CaseResult]) -> None:
    # What a later run pairs with, and this run against its baseline.
    suite.sections["case_results"] = case_results(results)
    apply_to_suite(config, suite, task, results)


def apply_to_suite(config: pytest.Config, summary: SuiteSummary, task: Any, results: Sequence[CaseResult]) -> None:
    """Check a suite's regression gates; sets its ``baseline`` section and may fail the suite."""
    thresholds = (summary.config or {}).get("thresholds") or {}
    try:
        gates = parse_regression_gates(thresholds)
    except SuiteConfigError as exc:
        summary.add_problem(str(exc))
        return
    baseline = get_baseline(config)
    path = baseline_path(config)
    if not gates and not isinstance(baseline, Baseline):
        return
    from pytest_evals.regression.case_pairing import compare_suite

    alpha = _alpha(config)
    if isinstance(baseline, BaselineError):
        summary.sections["baseline"] = {
            "path": path,
            "error": str(baseline),
            "gates": [
                {"metric": g.metric, "op": g.op, "margin": g.margin, "status": "failed", "passed": False,
                 "reason": f"baseline unreadable: {baseline}"}
                for g in gates
            ],
        }
        if gates:
            summary.reasons.append(Reason(ReasonKind.UNCHECKED_GATES, f"regression gates: baseline unreadable: {baseline}"))
        return
    suite_cases = baseline.suite(summary.suite, summary.name) if baseline is not None else None
    missing = None
    if baseline is None:
        missing = f"no baseline ({path} does not exist)" if path else "no baseline given (--evals-baseline)"
    elif suite_cases is None:
        missing = f"the baseline {baseline.path} has no suite {summary.suite!r}"
    comparison = compare_suite(task, gates, results, suite_cases, alpha=alpha, required=required(config),
                               tag=summary.suite)
    if missing:
        comparison.note = missing
        for checked in comparison.gates:
            checked.reason = missing + (" (--evals-baseline-required)" if checked.status == "failed" else "")
    block = comparison.to_json()
    block["path"] = str(baseline.path) if isinstance(baseline, Baseline) else path
    summary.sections["baseline"] = block
    config.stash.setdefault(COMPARISONS_KEY, {})[summary.suite] = comparison
    summary.reasons.extend(Reason(ReasonKind.REGRESSION, r.describe()) for r in comparison.gates if not r.passed)


def pytest_evals_terminal_suite(config: pytest.Config, terminalreporter: pytest.TerminalReporter, suite: SuiteSummary) -> None:
    comparison = config.stash.get(COMPARISONS_KEY, {}).get(suite.suite)
    for text, style in terminal_lines(suite.sections.get("baseline"), comparison):
        terminalreporter.write_line(text, **style)


def terminal_lines(block: dict[str, Any] | None, comparison: SuiteComparison | None) -> list[tuple[str, dict[str, bool]]]:
    """Lines the terminal shows under a suite's table: regression gates and flips."""
    if block is None:
        return []
    if comparison is None:
        return [(f"  vs baseline: {block.get('error', 'unavailable')}", {"red": True})]
    lines: list[tuple[str, dict[str, bool]]] = []
    head = f"  vs baseline: {comparison.paired} paired cases"
    extras = []
    if comparison.unpaired_current:
        extras.append(f"{len(comparison.unpaired_current)} only in this run")
    if comparison.unpaired_baseline:
        extras.append(f"{len(comparison.unpaired_baseline)} only in the baseline")
    if comparison.error_in_one:
        extras.append(f"{len(comparison.error_in_one)} erroring in one run")
    if comparison.note:
        extras.append(comparison.note)
    lines.append((head + (f" ({'; '.join(extras)})" if extras else ""), {}))
    for g in comparison.gates:
        style = {"red": True} if g.status == "failed" else ({"yellow": True} if g.status == "skipped" else {"green": True})
        label = {"failed": "REGRESSION", "passed": "no regression", "skipped": "SKIPPED"}[g.status]
        lines.append((f"  {label} {g.describe()}", style))
    for title, flips in (("newly failing", comparison.newly_failing), ("newly passing", comparison.newly_passing)):
        if not flips:
            continue
        shown = ", ".join(f["case_id"] for f in flips[:TERMINAL_FLIPS])
        more = f" and {len(flips) - TERMINAL_FLIPS} more" if len(flips) > TERMINAL_FLIPS else ""
        lines.append((f"  {title} ({len(flips)}): {shown}{more}", {"red": title == "newly failing"}))
    return lines


def write_markdown(config: pytest.Config, summary: dict[str, Any]) -> list[str]:
    """Write the Markdown summary where asked; returns the paths written."""
    targets: list[tuple[Path, str]] = []
    path = config.getoption("evals_markdown", None)
    if path:
        targets.append((Path(path), "w"))
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    opt = config.getoption("evals_step_summary", None)
    enabled = bool(opt) if opt is not None else bool(config.getini("evals_step_summary"))
    if step and enabled:
        targets.append((Path(step), "a"))
    if not targets:
        return []
    from pytest_evals.regression.markdown_summary import render

    html = config.getoption("htmlpath", None)
    text = render(summary, html_report=str(html) if html else None)
    written = []
    for target, mode in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "w":
            from pytest_evals.output.artifacts import atomic_write

            atomic_write(target, text)
        else:
            with target.open("a", encoding="utf-8") as fh:
                fh.write(text + "\n")
        written.append(str(target))
    return written


@pytest.hookimpl(trylast=True)
def pytest_evals_write_outputs(config: pytest.Config, summary: dict[str, Any]) -> None:
    config.stash[MARKDOWN_KEY] = write_markdown(config, summary)


def pytest_evals_terminal_summary(config: pytest.Config, terminalreporter: pytest.TerminalReporter) -> None:
    for path in config.stash.get(MARKDOWN_KEY, []):
        terminalreporter.write_line(f"Markdown summary: {path}")
