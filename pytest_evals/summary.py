"""Suite summaries: aggregates, gates, the terminal tables and the JSON summary file.

The JSON summary is the machine-readable verdict (schema in README.md). The terminal
shows the same numbers: one table per suite and a line for each missed gate.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_evals import __version__
from pytest_evals.aggregate import Metric, count, tree_to_json, walk
from pytest_evals.errors import SuiteConfigError
from pytest_evals.gates import check, parse_thresholds
from pytest_evals.outputs import atomic_write
from pytest_evals.results import CaseResult

if TYPE_CHECKING:
    from pytest_evals.session import EvalSession
    from pytest_evals.suite import Suite
    from pytest_evals.tasks.base import Task

SCHEMA_VERSION = 1
SUITE_ERROR_ID = "suite-error"


def case_counts(results: list[CaseResult]) -> dict[str, Any]:
    statuses = Counter(r.status for r in results)
    kinds = Counter(r.error_kind or "exception" for r in results if r.status == "error")
    return {
        "total": len(results),
        "passed": statuses.get("passed", 0),
        "failed": statuses.get("failed", 0),
        "errors": statuses.get("error", 0),
        "skipped": statuses.get("skipped", 0),
        "errors_by_kind": dict(sorted(kinds.items())),
    }


def errors_tolerated(counts: dict[str, Any], gate_metrics: list[str]) -> bool:
    """Erroring cases are acceptable only where a gate says how many: a gate on ``errors``
    covers every kind, a gate on ``errors_<kind>`` covers that kind."""
    if not counts["errors"]:
        return True
    tops = {m.split(".")[0] for m in gate_metrics}
    if "errors" in tops:
        return True
    return all(f"errors_{kind}" in tops for kind in counts["errors_by_kind"])


def verdict(counts: dict[str, Any], gates: list[Any], problems: list[str], strict: bool) -> tuple[bool, list[str]]:
    """A suite passes when its gates pass, nothing is wrong with it as a whole, and its
    failed/erroring cases are covered: by its gates (errors by an errors gate), or, for a
    suite without gates, by there being none (then it behaves like plain tests)."""
    reasons = [f"missed gate: {g.describe()}" for g in gates if not g.passed]
    reasons += problems
    if gates:
        if not errors_tolerated(counts, [g.metric for g in gates]):
            reasons.append(f"{counts['errors']} erroring case(s) and no gate on errors")
        if strict and counts["failed"]:
            reasons.append(f"{counts['failed']} failed case(s) (--evals-strict)")
    elif counts["failed"] or counts["errors"]:
        reasons.append(f"{counts['failed']} failed and {counts['errors']} erroring case(s); the suite has no gates")
    return not reasons, reasons


def suite_summary(
    suite: Suite, task: Task[Any], results: list[CaseResult], strict: bool = False
) -> dict[str, Any]:
    counts = case_counts(results)
    # An erroring case may still carry the metrics that did score (a RAG case whose
    # faithfulness judge failed still has its relevance): those feed the aggregates.
    scored = [r for r in results if r.status in ("passed", "failed") or (r.status == "error" and r.data)]
    problems: list[str] = []
    try:
        metrics, tables = task.aggregate(scored)
    except Exception as exc:  # an aggregation bug must not hide the other suites
        metrics, tables = {}, {}
        problems.append(f"aggregation failed: {type(exc).__name__}: {exc}")
    errors_tree: dict[str, Any] = {"errors": count(counts["errors"])}
    for kind, n in counts["errors_by_kind"].items():
        errors_tree[f"errors_{kind}"] = count(n)
    metrics = {**metrics, **errors_tree, "cases": count(counts["total"])}
    try:
        parsed = parse_thresholds(suite.config.thresholds)
        # An error kind that did not occur is a count of 0, not a missing metric.
        for gate in parsed:
            top = gate.metric.split(".")[0]
            if top.startswith("errors_") and top not in metrics:
                metrics[top] = count(0)
        gates = check(parsed, metrics)
    except SuiteConfigError as exc:
        gates = []
        problems.append(str(exc))
    suite_errors = [r.message for r in results if r.case_id == SUITE_ERROR_ID and r.message]
    problems.extend(suite_errors)
    passed, reasons = verdict(counts, gates, problems, strict)
    return {
        "suite": suite.nodeid,
        "name": suite.name,
        "task": suite.config.task,
        "what": suite.config.what,
        "generate": suite.config.generate,
        "config": suite.config.model_dump(mode="json", exclude_defaults=False),
        "cases": counts,
        "metrics": tree_to_json(metrics),
        "tables": tables,
        "gates": [g.to_json() for g in gates],
        "problems": problems,
        "passed": passed,
        "reasons": reasons,
        "_metric_tree": metrics,
        "_gate_objects": gates,
    }


def suite_error_summary(suite_id: str, message: str, results: list[CaseResult]) -> dict[str, Any]:
    return {
        "suite": suite_id,
        "name": Path(suite_id).name,
        "task": None,
        "what": "",
        "generate": False,
        "config": None,
        "cases": case_counts(results),
        "metrics": {},
        "tables": {},
        "gates": [],
        "problems": [message],
        "passed": False,
        "reasons": [message],
        "_metric_tree": {},
        "_gate_objects": [],
    }


def public(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if not k.startswith("_")}


def build_run_summary(state: EvalSession) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "pytest_evals_version": __version__,
        "started_at": state.started,
        "duration_s": None,
        "passed": all(s["passed"] for s in state.summaries),
        "warnings": state.warnings(),
        "suites": [public(s) for s in state.summaries],
    }



def generated_dir(state: EvalSession) -> Path:
    from pytest_evals.outputs import run_dir

    folder = run_dir(state.config)
    return folder if folder is not None else state.config.rootpath / ".pytest_evals" / "generated"


def write_generated(state: EvalSession) -> dict[str, str]:
    """generated.jsonl per generate:true suite, in case order, re-scorable with generate: false."""
    per_suite: dict[str, list[tuple[int, Any]]] = {}
    generate_suites = {s["suite"]: s["name"] for s in state.summaries if s.get("generate")}
    if not generate_suites:
        return {}
    for data in state.iter_full_results():
        generated = (data.get("details") or {}).get("generated")
        if data.get("suite") in generate_suites and generated is not None:
            per_suite.setdefault(data["suite"], []).append((data.get("index", 0), generated))
    from pytest_evals.outputs import run_dir, suite_folders

    written: dict[str, str] = {}
    base = generated_dir(state)
    in_run_dir = run_dir(state.config) is not None
    # Safe, unique names: a suite named "../x" or two suites with one name never collide.
    folders = suite_folders(state.summaries)
    for suite_id, rows in per_suite.items():
        name = folders[suite_id]
        path = base / name / "generated.jsonl" if in_run_dir else base / f"{name}.jsonl"
        rows.sort(key=lambda r: r[0])
        atomic_write(path, "".join(json.dumps(g, ensure_ascii=False) + "\n" for _, g in rows))
        written[suite_id] = str(path)
    return written


def write_outputs(state: EvalSession) -> None:
    import time

    assert state.summary is not None
    summary = state.summary
    summary["duration_s"] = round(time.time() - state.started, 3)
    generated = write_generated(state)
    for s in summary["suites"]:
        if s["suite"] in generated:
            s["generated_path"] = generated[s["suite"]]
    for s in state.summaries:
        if s["suite"] in generated:
            s["generated_path"] = generated[s["suite"]]
    path = state.config.getoption("evals_json", None)
    if path:
        atomic_write(Path(path), json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n")
    _junit_properties(state)
    from pytest_evals.regression.plugin import write_markdown

    state.markdown_paths = write_markdown(state.config, summary)


def _junit_properties(state: EvalSession) -> None:
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover
        return
    xml = state.config.stash.get(xml_key, None)
    if xml is None:
        return
    for s in state.summaries:
        prefix = f"evals.{s['name']}"
        xml.add_global_property(f"{prefix}.passed", str(s["passed"]).lower())
        for path, metric in walk(s["_metric_tree"]):
            xml.add_global_property(f"{prefix}.{path}", _fmt_plain(metric.value))
            if metric.ci is not None:
                xml.add_global_property(f"{prefix}.{path}.ci", f"{metric.ci[0]:.6g},{metric.ci[1]:.6g}")
        for g in s["gates"]:
            xml.add_global_property(f"{prefix}.gate.{g['metric']}.{g['op']}", "passed" if g["passed"] else "failed")


def _fmt_plain(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.6g}"


def fmt_metric(metric: Metric) -> tuple[str, str]:
    if metric.value is None:
        return "undefined", ""
    if metric.kind == "count":
        return f"{int(metric.value)}", ""
    value = f"{metric.value:.3f}"
    ci = f"[{metric.ci[0]:.3f}, {metric.ci[1]:.3f}]" if metric.ci else ""
    return value, ci


def render_terminal(tr: Any, state: EvalSession) -> None:
    from pytest_evals.regression.plugin import terminal_lines as regression_lines

    tr.write_sep("=", "pytest_evals summary")
    header = (state.summary or {}).get("llm", {}).get("judge_line") if state.summary else None
    if header:
        tr.write_line(header)
    for s in state.summaries:
        c = s["cases"]
        verdict = "PASSED" if s["passed"] else "FAILED"
        tr.write_line("")
        tr.write_line(
            f"{s['name']} [{s['task']}] {s['suite']}: {c['total']} cases, {c['passed']} passed, "
            f"{c['failed']} failed, {c['errors']} errors, {c['skipped']} skipped -> {verdict}",
            bold=True,
            green=s["passed"],
            red=not s["passed"],
        )
        gates_by_metric: dict[str, list[Any]] = {}
        for g in s["_gate_objects"]:
            base = g.metric.rsplit(".", 1)[0] if g.metric.endswith((".ci_low", ".ci_high")) else g.metric
            gates_by_metric.setdefault(base, []).append(g)
        rows = [("metric", "value", "95% CI", "gate", "result")]
        verbose = state.config.get_verbosity() > 0
        hidden = 0
        for path, metric in walk(s["_metric_tree"]):
            if metric.kind == "count" and path.startswith("errors_") and path not in gates_by_metric:
                continue
            if "." in path and path not in gates_by_metric and not verbose:
                # Nested breakdowns (per class, per guardrail, per task) can run to
                # hundreds of rows; the JSON summary and -v show them all.
                hidden += 1
                continue
            value, ci = fmt_metric(metric)
            if metric.value is None and metric.reason:
                value = f"undefined ({metric.reason.removeprefix('undefined: ')})"
            gate_text, result = "", ""
            for g in gates_by_metric.get(path, []):
                sign = ">=" if g.op == "min" else "<="
                target = g.metric[len(path) + 1 :] or "value"
                gate_text += (", " if gate_text else "") + (f"{target} {sign} {g.threshold:g}" if target != "value" else f"{sign} {g.threshold:g}")
                result = "FAIL" if (result == "FAIL" or not g.passed) else "pass"
            rows.append((path, value, ci, gate_text, result))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        for row in rows:
            tr.write_line("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if hidden:
            tr.write_line(f"  ({hidden} nested metrics not shown: run with -v or read the JSON summary)")
        for reason in s["reasons"]:
            if reason.startswith("regression: "):
                continue  # shown with its paired test by regression_lines below
            if reason.startswith("missed gate: "):
                label, reason = "MISSED GATE", reason.removeprefix("missed gate: ")
            else:
                label = "PROBLEM" if reason in s["problems"] else "FAILED"
            tr.write_line(f"  {label} {s['name']}: {reason}", red=True)
        for text, style in regression_lines(s):
            tr.write_line(text, **style)
        if s.get("generated_path"):
            tr.write_line(f"  generated outputs: {s['generated_path']}")
    for warning in state.warnings():
        tr.write_line(f"WARNING: {warning}", yellow=True)
    if state.exit_note:
        tr.write_line("")
        tr.write_line(state.exit_note, yellow=True)
    json_path = state.config.getoption("evals_json", None)
    if json_path:
        tr.write_line(f"JSON summary: {json_path}")
    for md in getattr(state, "markdown_paths", []):
        tr.write_line(f"Markdown summary: {md}")
