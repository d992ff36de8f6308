"""The evaluation summary at the top of the HTML report, built from the JSON summary.

Per suite: the verdict, case counts, the aggregate table (value, 95% interval, n, gate,
result: the numbers of the terminal and of ``--evals-json``, each cell also carrying
the exact value in a data attribute), the gates, problems, how much case detail the
report holds, and the plots. Above the suites: the model and judge, requests, cache
hits, tokens and cost. This module picks and formats the values
(:mod:`pytest_evals.model.value_format`); ``templates/summary.jinja2`` lays them out, escaped.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_evals.model import value_format as fmt
from pytest_evals.output.html_templating import macros
from pytest_evals.reports.plots import Plot

_SECRET_WORDS = ("api_key", "apikey", "secret", "password", "authorization")
_PACKAGE = "pytest_evals.reports"
_TEMPLATE = "summary.jinja2"

#: Flipped cases shown per direction in a suite's "vs baseline" section (all in the JSON).
BASELINE_FLIPS = 200


def flatten(tree: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Mapping[str, Any]]]:
    """(dotted path, leaf) pairs of a JSON metric tree, in order."""
    return fmt.walk(tree, prefix)


def fmt_value(leaf: Mapping[str, Any]) -> str:
    return fmt.metric_value(leaf.get("value"), leaf.get("kind"), leaf.get("reason"))


def fmt_ci(leaf: Mapping[str, Any]) -> str:
    return fmt.metric_interval(leaf.get("value"), leaf.get("kind"), leaf.get("ci_low"), leaf.get("ci_high"))


def _html(name: str, *args: Any) -> str:
    return str(getattr(macros(_PACKAGE, _TEMPLATE), name)(*args))


# -- what each part shows ------------------------------------------------------------------


def metric_rows(suite: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(top-level and gated rows, nested rows) of a suite's metric table."""
    gates = fmt.gates_by_metric(suite.get("gates") or [])
    top: list[dict[str, Any]] = []
    nested: list[dict[str, Any]] = []
    for path, leaf in flatten(suite.get("metrics") or {}):
        gate, result = fmt.gate_cells(path, gates.get(path, []))
        row = {
            "path": path,
            "value": leaf.get("value"),
            "value_text": fmt_value(leaf),
            "low": leaf.get("ci_low"),
            "high": leaf.get("ci_high"),
            "ci_text": fmt_ci(leaf),
            "n": leaf.get("n", ""),
            "gate": gate,
            "result": result,
        }
        (nested if "." in path and path not in gates else top).append(row)
    return top, nested


def gate_rows(suite: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "metric": g["metric"],
            "required": f"{fmt.sign(g['op'])} {fmt.threshold(g['threshold'])}",
            "value": g.get("value"),
            "value_text": fmt.gate_value(g.get("value")),
            "passed": bool(g["passed"]),
            "reason": g.get("reason") or "",
        }
        for g in suite.get("gates") or []
    ]


def baseline_view(block: Mapping[str, Any]) -> dict[str, Any]:
    notes = [f"{int(block.get('paired', 0)):,} paired cases"]
    if block.get("cases") is not None and block.get("cases") != block.get("paired", 0):
        notes[0] += f" of {int(block['cases']):,} in this run"
    for key, label in (("unpaired_current", "only in this run"), ("unpaired_baseline", "only in the baseline"),
                       ("error_in_one_run", "erroring in one run")):
        if block.get(key):
            notes.append(f"{len(block[key]):,} {label}")
    if block.get("note"):
        notes.append(str(block["note"]))
    allowed = " (allowed by --evals-baseline-allow-changes)" if block.get("changes_allowed") else ""
    warnings = []
    changed = block.get("changed_inputs") or []
    if changed:
        warnings.append(f"inputs changed since the baseline{allowed}: {len(changed):,} case id(s), not paired: "
                        + ", ".join(map(str, changed[:BASELINE_FLIPS])) + (" …" if len(changed) > BASELINE_FLIPS else ""))
    warnings += [f"setting changed since the baseline{allowed}: {c}" for c in block.get("settings_changes") or []]
    if block.get("settings_note"):
        warnings.append(str(block["settings_note"]))
    undecided = block.get("inconclusive") or []
    if undecided:
        warnings.append(f"inconclusive regression gate(s): {', '.join(map(str, undecided))} (they pass unless "
                        "--evals-fail-inconclusive)")
    source = str(block.get("path") or "") + (f" ({block['chosen']})" if block.get("chosen") else "")
    gates = [
        {
            "metric": g.get("metric"),
            "gate": fmt.margin(str(g.get("op", "")), g.get("margin", 0)),
            "change": fmt.change(g.get("baseline"), g.get("current"), g.get("diff")),
            "ci": fmt.signed_interval(g.get("ci_low"), g.get("ci_high")),
            "p": fmt.p_value(g.get("p_value")),
            "method": g.get("method", ""),
            "status": str(g.get("status", "")),
            "verdict": str(g.get("verdict") or ""),
            "result": fmt.regression_result(g.get("status"), g.get("verdict")),
            "reason": g.get("reason") or "",
        }
        for g in block.get("gates") or []
    ]
    flips = []
    for key, title in (("newly_failing", "Newly failing"), ("newly_passing", "Newly passing")):
        cases = block.get(key) or []
        if cases:
            flips.append({"key": key, "title": title, "total": len(cases), "cases": cases[:BASELINE_FLIPS],
                          "more": max(0, len(cases) - BASELINE_FLIPS)})
    return {"error": block.get("error"), "note": "; ".join(notes), "gates": gates, "flips": flips,
            "warnings": warnings, "source": source}


def counts_view(suite: Mapping[str, Any]) -> dict[str, Any]:
    c = suite.get("cases") or {}
    kinds = c.get("errors_by_kind") or {}
    return {
        **{k: int(c.get(k, 0)) for k in ("total", "passed", "failed", "errors", "skipped")},
        "by_kind": f" ({', '.join(f'{k}: {v}' for k, v in kinds.items())})" if kinds else "",
        # A suite that ran on part of its population says how much of it.
        "partial": fmt.population_text(c) if suite.get("partial") else None,
    }


def verdict_word(passed: bool, partial: bool) -> str:
    """PASSED, FAILED, or PARTIAL: passed on part of its population (allowed)."""
    if not passed:
        return "FAILED"
    return "PARTIAL" if partial else "PASSED"


def detail_view(counts: Mapping[str, int] | None) -> dict[str, Any] | None:
    if not counts:
        return None
    full, summary, over = counts.get("full", 0), counts.get("summary", 0), counts.get("over_budget", 0)
    rows = counts.get("rows", 0)
    parts = [f"{rows:,} case(s) with a row in the results table", f"full detail for {full:,} case(s)"]
    if summary:
        parts.append(f"summarised detail for {summary:,} passing case(s)")
    if over:
        parts.append(
            f"{over:,} case(s) summarised because the report reached its size budget "
            "(evals_html_max_mb)"
        )
    return {"rows": rows, "full": full, "summary": summary, "over": over, "text": "; ".join(parts)}


def plot_views(plots: Sequence[Plot]) -> list[dict[str, str]]:
    # An SVG shown through <img> cannot run script, whatever labels it holds.
    return [
        {"name": p.name, "title": p.title, "src": "data:image/svg+xml;base64," + base64.b64encode(p.svg).decode("ascii")}
        for p in plots
    ]


def _scalar(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def llm_view(llm: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not llm:
        return None
    rows = [
        (str(key), _scalar(value))
        for key, value in llm.items()
        if not (key == "judge_line" or value is None or value == "" or any(w in key.lower() for w in _SECRET_WORDS))
    ]
    return {"judge_line": llm.get("judge_line"), "rows": rows}


def suite_view(
    suite: Mapping[str, Any], index: int, plots: Sequence[Plot], detail: Mapping[str, int] | None
) -> dict[str, Any]:
    top, nested = metric_rows(suite)
    block = suite.get("baseline")
    return {
        "index": index,
        "suite": suite.get("suite"),
        "name": suite.get("name"),
        "task": suite.get("task"),
        "what": suite.get("what"),
        "passed": bool(suite.get("passed")),
        "verdict": verdict_word(bool(suite.get("passed")), bool(suite.get("partial"))),
        "counts": counts_view(suite),
        "metrics": top,
        "nested": nested,
        "gates": gate_rows(suite),
        "baseline": baseline_view(block) if block else None,
        "problems": list(suite.get("problems") or []),
        "warnings": list(suite.get("warnings") or []),
        "generated": suite.get("generated_path"),
        "detail": detail_view(detail),
        "plots": plot_views(plots),
    }


# -- the HTML of each part ----------------------------------------------------------------


def metrics_table(suite: Mapping[str, Any]) -> str:
    top, nested = metric_rows(suite)
    return _html("metrics_table", top, nested)


def gates_table(suite: Mapping[str, Any]) -> str:
    return _html("gates_table", gate_rows(suite))


def baseline_section(suite: Mapping[str, Any]) -> str:
    """This run against ``--evals-baseline``: the regression gates with their paired
    tests, then the cases that flipped, the baseline's evidence beside this run's."""
    block = suite.get("baseline")
    return _html("baseline_section", baseline_view(block)) if block else ""


def counts_line(suite: Mapping[str, Any]) -> str:
    return _html("counts_line", counts_view(suite))


def suite_section(
    suite: Mapping[str, Any], index: int, plots: Sequence[Plot], detail: Mapping[str, int] | None
) -> str:
    return _html("suite_section", suite_view(suite, index, plots, detail))


def run_section(
    summary: Mapping[str, Any],
    plots: Mapping[str, Sequence[Plot]],
    detail: Mapping[str, Mapping[str, int]],
    report_dir: str | None,
    json_path: str | None,
) -> str:
    suites = list(summary.get("suites") or [])
    files = []
    if json_path:
        files.append(f"JSON summary: {json_path}")
    if report_dir:
        files.append(f"result files: {report_dir}")
    run = {
        "passed": bool(summary.get("passed")),
        "verdict": verdict_word(bool(summary.get("passed")), bool(summary.get("partial"))),
        "files": " · ".join(files),
        "note": summary.get("exit_note"),
        "llm": llm_view(summary.get("llm")),
        "suites": [
            suite_view(s, i, plots.get(str(s.get("suite")), []), detail.get(str(s.get("suite"))))
            for i, s in enumerate(suites)
        ],
    }
    return _html("run_section", run)


def case_list(count: int, dropped: Mapping[str, int]) -> str:
    """The container of the case list (filled by report.js from the case store).

    Open when some cases have no row in pytest-html's table (large runs), folded
    otherwise (it then repeats the table in a searchable form).
    """
    left_out = sum(dropped.values())
    note = (
        f"{left_out:,} of {count:,} cases have no row in the results table below (it would "
        "take too long to open): find them here."
        if left_out
        else f"All {count:,} cases also have a row in the results table below."
    )
    return _html("case_list", count, left_out, note)
