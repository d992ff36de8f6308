"""Wiring of regression gates: options, the baseline on a StashKey, per-suite checks
(``pytest_evals_suite_verdict``), terminal lines (``pytest_evals_terminal_suite``,
``pytest_evals_terminal_summary``) and the Markdown summary."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.controller.artifact_writers import names_artifact, writing
from pytest_evals.model.errors import SuiteConfigError
from pytest_evals.regression.drop_gates import (
    DEFAULT_ALPHA,
    INCONCLUSIVE,
    RegressionGate,
    parse_regression_gates,
)

if TYPE_CHECKING:
    # Every pytest run loads this plugin: the verdict model and the baseline reader
    # (run_reader, stats, orjson) are imported when a suite is judged or a baseline read.
    from pytest_evals.controller.suite_verdict import SuiteSummary
    from pytest_evals.model.case_result import CaseResult
    from pytest_evals.regression.baseline_run import Baseline, BaselineError
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
                    help="compare with an earlier run: its --evals-report-dir folder (a folder of run folders: "
                    "its newest), results.jsonl or --evals-json summary (cases paired by suite, case id and "
                    "input); a path that cannot be read fails the run")
    group.addoption("--evals-baseline-required", action="store_true", default=None,
                    help="fail max_drop/max_rise gates when there is no baseline (default: skipped)")
    group.addoption("--evals-baseline-allow-changes", action="store_true", default=None,
                    help="compare with a baseline whose inputs (case fingerprints), settings (models, target) "
                    "or suites differ: changed cases are left out of the paired tests and every difference is "
                    "reported (default: regression gates fail)")
    group.addoption("--evals-fail-inconclusive", action="store_true", default=None,
                    help="fail regression gates that cannot tell regression from none (default: they pass, "
                    "shown as inconclusive)")
    group.addoption("--evals-alpha", type=float, metavar="A",
                    help="significance level of max_drop/max_rise gates (default 0.05; a gate's own alpha wins)")
    group.addoption("--evals-markdown", metavar="PATH",
                    help="write a GitHub-flavoured Markdown summary (verdicts, gates, regressions, flipped cases)")
    group.addoption("--no-evals-step-summary", dest="evals_step_summary", action="store_false", default=None,
                    help="do not append the Markdown summary to $GITHUB_STEP_SUMMARY")
    parser.addini("evals_baseline", "default for --evals-baseline", default="")
    parser.addini("evals_alpha", "default significance level of regression gates (0.05)", default="")
    parser.addini("evals_baseline_required", "fail regression gates without a baseline", type="bool", default=False)
    parser.addini("evals_baseline_allow_changes", "compare with a baseline of other inputs or settings "
                  "(see --evals-baseline-allow-changes)", type="bool", default=False)
    parser.addini("evals_fail_inconclusive", "fail inconclusive regression gates", type="bool", default=False)
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
    """The baseline of this run (read once), the error reading it (a path that does not
    exist included), or None when none was given."""
    if BASELINE_KEY in config.stash:
        return config.stash[BASELINE_KEY]
    path = baseline_path(config)
    loaded: Baseline | BaselineError | None = None
    if path is not None:
        from pytest_evals.regression.baseline_run import BaselineError, load_baseline

        p = Path(path)
        if not p.is_absolute():
            p = config.invocation_params.dir / p
        try:
            loaded = load_baseline(p)
        except BaselineError as exc:
            loaded = exc
    config.stash[BASELINE_KEY] = loaded
    return loaded


def _flag(config: pytest.Config, option: str) -> bool:
    opt = config.getoption(option, None)
    return bool(opt) if opt is not None else bool(config.getini(option))


def required(config: pytest.Config) -> bool:
    return _flag(config, "evals_baseline_required")


def case_results(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """What a later run needs to pair with this one (the summary's ``case_results``)."""
    return [
        {"case_id": r.case_id, "status": r.status, "scores": r.scores, "data": r.data, "message": r.message,
         "fingerprint": r.fingerprint}
        for r in results
        if r.case_id != "suite-error"
    ]


def pytest_evals_suite_verdict(config: pytest.Config, suite: SuiteSummary, task: Task[Any], results: Sequence[CaseResult]) -> None:
    # What a later run pairs with (cases and settings), and this run against its baseline.
    from pytest_evals.regression.recorded_settings import suite_settings

    suite.sections["case_results"] = case_results(results)
    suite.sections["settings"] = suite_settings(config, task, results)
    if "variants" not in suite.sections:  # a suite with variants: each variant on its own (variant_plugin.py)
        apply_to_suite(config, suite, task, results)


def undefined_gates(summary: SuiteSummary, gates: Sequence[RegressionGate], task: Any,
                    results: Sequence[CaseResult]) -> list[str]:
    """Why gates are not gates of this suite: a metric its task does not compute, or one
    the paired test would compute otherwise than the suite does (a "yes vs rest"
    precision of a multiclass task, say)."""
    from pytest_evals.model.metric_value import walk

    values = dict(walk(summary.metrics))
    task_name = summary.task or "?"
    problems = []
    for g in gates:
        metric = values.get(g.metric)
        if metric is None:
            known = [p for p in values if "." not in p and p != "cases" and not p.startswith("errors")]
            problems.append(
                f"thresholds.{g.metric}.{g.op}: the {task_name} task computes no metric {g.metric!r} for this "
                f"suite (its metrics: {', '.join(known[:12]) or 'none'}{' ...' if len(known) > 12 else ''})"
            )
            continue
        if metric.value is None:
            continue  # undefined here (0/0): the paired test says so
        from pytest_evals.regression.case_pairing import metric_over

        mine = metric_over(task, g.metric, results)
        if mine is not None and abs(mine - float(metric.value)) > 1e-6 * max(1.0, abs(mine)):
            problems.append(
                f"thresholds.{g.metric}.{g.op}: the paired test's rule for {g.metric!r} gives {mine:.6g} over this "
                f"run's cases, but the suite's {g.metric} is {float(metric.value):.6g}: the gate would test another "
                f"quantity (a task defines its own with Task.paired_contribution)"
            )
    return problems


def apply_to_suite(config: pytest.Config, summary: SuiteSummary, task: Any, results: Sequence[CaseResult]) -> None:
    """Check a suite's regression gates; sets its ``baseline`` section and may fail the suite."""
    from pytest_evals.controller.suite_verdict import Reason, ReasonKind

    thresholds = (summary.config or {}).get("thresholds") or {}
    try:
        gates = parse_regression_gates(thresholds)
    except SuiteConfigError as exc:
        summary.add_problem(str(exc))
        return
    if gates:
        wrong = undefined_gates(summary, gates, task, results)
        for text in wrong:
            summary.add_problem(text)
        if wrong:
            return
    baseline = get_baseline(config)
    path = baseline_path(config)
    if not gates and baseline is None:
        return
    # Imported past that return: a run without regression gates or a baseline reads no run file.
    from pytest_evals.regression.baseline_run import Baseline, BaselineError
    from pytest_evals.regression.case_pairing import compare_suite

    alpha = _alpha(config)
    allow = _flag(config, "evals_baseline_allow_changes")
    if isinstance(baseline, BaselineError):
        summary.sections["baseline"] = {
            "path": path,
            "error": str(baseline),
            "gates": [
                {"metric": g.metric, "op": g.op, "margin": g.margin, "status": "failed", "verdict": None,
                 "passed": False, "reason": f"baseline unreadable: {baseline}"}
                for g in gates
            ],
        }
        _unusable(summary, gates, f"baseline unreadable: {baseline}")
        return
    suite_cases = baseline.suite(summary.suite, summary.name) if baseline is not None else None
    missing = None
    if baseline is None:
        missing = "no baseline given (--evals-baseline)"
    elif suite_cases is None:
        suites = sorted(baseline.suites)
        missing = (f"the baseline has no suite {summary.suite!r} (suites there: "
                   f"{', '.join(suites[:5]) or 'none'}{' ...' if len(suites) > 5 else ''}): a renamed or new suite file?")
    changes: list[str] = []
    settings_note = None
    if baseline is not None and suite_cases is not None:
        from pytest_evals.regression.recorded_settings import setting_changes

        recorded = baseline.settings.suite(summary.suite, summary.name) if baseline.settings is not None else None
        if recorded is None:
            settings_note = "the baseline records no settings (an older version?): models and target not checked"
        else:
            changes = setting_changes(recorded, summary.sections.get("settings") or {})
    comparison = compare_suite(task, gates, results, suite_cases, alpha=alpha, required=required(config),
                               tag=summary.suite, settings_changes=changes, settings_note=settings_note,
                               allow_changes=allow, fail_inconclusive=_flag(config, "evals_fail_inconclusive"))
    if missing:
        comparison.note = missing
        unusable = baseline is not None and not allow
        for checked in comparison.gates:
            if unusable:
                checked.status = "failed"
            checked.reason = missing + (" (--evals-baseline-required)" if checked.status == "failed" and
                                        not unusable else "")
    block = comparison.to_json()
    block["path"] = str(baseline.path) if isinstance(baseline, Baseline) else path
    if isinstance(baseline, Baseline) and baseline.chosen:
        block["chosen"] = baseline.chosen
    summary.sections["baseline"] = block
    config.stash.setdefault(COMPARISONS_KEY, {})[summary.suite] = comparison
    if missing and baseline is not None and not allow:
        _unusable(summary, gates, missing + " (--evals-baseline-allow-changes accepts it)")
        return
    mismatch = comparison.mismatch()
    if mismatch and not allow and gates:
        summary.reasons.append(Reason(ReasonKind.UNCHECKED_GATES, f"regression gates: baseline mismatch: {mismatch} "
                                      "(--evals-baseline-allow-changes compares anyway)"))
    for r in comparison.gates:
        if r.passed or (mismatch and not allow and r.verdict is None and r.test is not None):
            continue
        kind = ReasonKind.INCONCLUSIVE if r.verdict == INCONCLUSIVE else ReasonKind.REGRESSION
        summary.reasons.append(Reason(kind, r.describe()))


def _unusable(summary: SuiteSummary, gates: Sequence[RegressionGate], text: str) -> None:
    """A baseline given but unusable for this suite fails it: its regression gates are
    unchecked, and a suite without any was still promised a comparison."""
    from pytest_evals.controller.suite_verdict import Reason, ReasonKind

    if gates:
        summary.reasons.append(Reason(ReasonKind.UNCHECKED_GATES, f"regression gates: {text}"))
    else:
        summary.add_problem(f"--evals-baseline: {text}")


def pytest_evals_terminal_suite(config: pytest.Config, terminalreporter: pytest.TerminalReporter, suite: SuiteSummary) -> None:
    comparison = config.stash.get(COMPARISONS_KEY, {}).get(suite.suite)
    for text, style in terminal_lines(suite.sections.get("baseline"), comparison):
        terminalreporter.write_line(text, **style)


def gate_label(status: str, verdict: str | None) -> tuple[str, dict[str, bool]]:
    """The word a regression gate's line starts with, and its colour."""
    if verdict == "regression":
        return "REGRESSION", {"red": True}
    if verdict == "no regression":
        return "no regression", {"green": True}
    if verdict == INCONCLUSIVE:
        return "INCONCLUSIVE", {"red": True} if status == "failed" else {"yellow": True}
    if status == "skipped":
        return "SKIPPED", {"yellow": True}
    return "UNCHECKED", {"red": True}


def terminal_lines(block: dict[str, Any] | None, comparison: SuiteComparison | None) -> list[tuple[str, dict[str, bool]]]:
    """Lines the terminal shows under a suite's table: the baseline read, what differs
    from it, regression gates and flips."""
    if block is None:
        return []
    if comparison is None:
        return [(f"  vs baseline: {block.get('error', 'unavailable')}", {"red": True})]
    lines: list[tuple[str, dict[str, bool]]] = []
    if block.get("path"):
        chosen = f" ({block['chosen']})" if block.get("chosen") else ""
        lines.append((f"  baseline: {block['path']}{chosen}", {}))
    head = f"  vs baseline: {comparison.paired} paired cases"
    extras = []
    if comparison.paired != comparison.cases and comparison.note is None:
        extras.append(f"of {comparison.cases} in this run")
    if comparison.unpaired_current:
        extras.append(f"{len(comparison.unpaired_current)} only in this run")
    if comparison.unpaired_baseline:
        extras.append(f"{len(comparison.unpaired_baseline)} only in the baseline")
    if comparison.error_in_one:
        extras.append(f"{len(comparison.error_in_one)} erroring in one run")
    if comparison.note:
        extras.append(comparison.note)
    lines.append((head + (f" ({'; '.join(extras)})" if extras else ""), {}))
    allowed = " (allowed: --evals-baseline-allow-changes)" if comparison.changes_allowed else ""
    warn = {"yellow": True} if comparison.changes_allowed else {"red": True}
    if comparison.changed_inputs:
        from pytest_evals.regression.case_pairing import shown

        lines.append((f"  inputs changed since the baseline ({len(comparison.changed_inputs)} case ids, not paired)"
                      f"{allowed}: {shown(comparison.changed_inputs, TERMINAL_FLIPS)}", warn))
    if comparison.settings_changes:
        from pytest_evals.regression.recorded_settings import shown_changes

        lines.append((f"  settings changed since the baseline{allowed}: {shown_changes(comparison.settings_changes)}",
                      warn))
    for note in (comparison.settings_note,
                 f"{comparison.unchecked_inputs} paired case(s) without an input fingerprint in one run: their "
                 "inputs are not checked" if comparison.unchecked_inputs else None):
        if note:
            lines.append((f"  note: {note}", {"yellow": True}))
    for g in comparison.gates:
        label, style = gate_label(g.status, g.verdict)
        lines.append((f"  {label} {g.describe()}", style))
    for title, flips in (("newly failing", comparison.newly_failing), ("newly passing", comparison.newly_passing)):
        if not flips:
            continue
        ids = ", ".join(f["case_id"] for f in flips[:TERMINAL_FLIPS])
        more = f" and {len(flips) - TERMINAL_FLIPS} more" if len(flips) > TERMINAL_FLIPS else ""
        lines.append((f"  {title} ({len(flips)}): {ids}{more}", {"red": title == "newly failing"}))
    undecided = [g for g in comparison.inconclusive if g.status != "failed"]
    if undecided:
        names = ", ".join(g.gate.metric for g in undecided)
        lines.append((f"  inconclusive ({names}): passes; --evals-fail-inconclusive fails it", {"yellow": True}))
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
        # The --evals-markdown file and GitHub's step summary each on their own.
        with writing(config, "Markdown summary", target):
            target.parent.mkdir(parents=True, exist_ok=True)
            if mode == "w":
                from pytest_evals.output.artifacts import atomic_write

                atomic_write(target, text)
            else:
                with target.open("a", encoding="utf-8") as fh:
                    fh.write(text + "\n")
            written.append(str(target))
    return written


def junit_properties(config: pytest.Config, summary: dict[str, Any]) -> None:
    """Each suite's regression verdicts and baseline differences as JUnit test-suite
    properties, beside the core's (``evals.<suite>.regression.<metric>.<op>``)."""
    from pytest_evals.output.artifacts import junit_xml

    xml = junit_xml(config)
    if xml is None:
        return
    for s in summary.get("suites") or []:
        block = s.get("baseline")
        if not block:
            continue
        prefix = f"evals.{s.get('name')}"
        for g in block.get("gates") or []:
            xml.add_global_property(f"{prefix}.regression.{g.get('metric')}.{g.get('op')}",
                                    str(g.get("verdict") or g.get("status")))
        if block.get("error"):
            xml.add_global_property(f"{prefix}.baseline.error", str(block["error"]))
            continue
        for key in ("changed_inputs", "settings_changes", "unpaired_current", "unpaired_baseline"):
            if block.get(key):
                xml.add_global_property(f"{prefix}.baseline.{key}", str(len(block[key])))
        if block.get("changes_allowed") and (block.get("changed_inputs") or block.get("settings_changes")):
            xml.add_global_property(f"{prefix}.baseline.changes_allowed", "true")


@pytest.hookimpl(trylast=True)
@names_artifact("Markdown summary")
def pytest_evals_write_outputs(config: pytest.Config, summary: dict[str, Any]) -> None:
    config.stash[MARKDOWN_KEY] = write_markdown(config, summary)
    with writing(config, "JUnit XML properties (regression)", config.getoption("xmlpath", None)):
        junit_properties(config, summary)


def pytest_evals_terminal_summary(config: pytest.Config, terminalreporter: pytest.TerminalReporter) -> None:
    for path in config.stash.get(MARKDOWN_KEY, []):
        terminalreporter.write_line(f"Markdown summary: {path}")
