"""The evaluation summary at the top of the HTML report, built from the JSON summary.

Per suite: the verdict, case counts, the aggregate table (value, 95% interval, n, gate,
result: the numbers of the terminal and of ``--evals-json``, each cell also carrying
the exact value in a data attribute), the gates, problems, how much case detail the
report holds, and the plots. Above the suites: the model and judge, requests, cache
hits, tokens and cost. Every value from a suite, a case or a model is escaped.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_evals.reports.escape import text
from pytest_evals.reports.plots import Plot

_SECRET_WORDS = ("api_key", "apikey", "secret", "password", "authorization")


def flatten(tree: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Mapping[str, Any]]]:
    """(dotted path, leaf) pairs of a JSON metric tree, in order."""
    for key, node in tree.items():
        path = f"{prefix}{key}"
        if isinstance(node, Mapping) and "value" in node and "kind" in node:
            yield path, node
        elif isinstance(node, Mapping):
            yield from flatten(node, path + ".")


def fmt_value(leaf: Mapping[str, Any]) -> str:
    value = leaf.get("value")
    if value is None:
        reason = str(leaf.get("reason") or "").removeprefix("undefined: ")
        return f"undefined ({reason})" if reason else "undefined"
    if leaf.get("kind") == "count":
        return f"{int(value)}"
    return f"{value:.3f}"


def fmt_ci(leaf: Mapping[str, Any]) -> str:
    if leaf.get("value") is None or "ci_low" not in leaf:
        return ""
    return f"[{leaf['ci_low']:.3f}, {leaf['ci_high']:.3f}]"


def _data(value: Any) -> str:
    return text(json.dumps(value))


def _gates_by_metric(gates: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for g in gates:
        metric = str(g["metric"])
        base = metric.rsplit(".", 1)[0] if metric.endswith((".ci_low", ".ci_high")) else metric
        out.setdefault(base, []).append(g)
    return out


def _gate_text(path: str, gates: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    parts, result = [], ""
    for g in gates:
        sign = ">=" if g["op"] == "min" else "<="
        target = str(g["metric"])[len(path) + 1 :]
        parts.append(f"{target} {sign} {g['threshold']:g}" if target else f"{sign} {g['threshold']:g}")
        result = "FAIL" if (result == "FAIL" or not g["passed"]) else "pass"
    return ", ".join(parts), result


def _metric_row(path: str, leaf: Mapping[str, Any], gates: Sequence[Mapping[str, Any]]) -> str:
    gate, result = _gate_text(path, gates)
    low, high = leaf.get("ci_low"), leaf.get("ci_high")
    cls = {"pass": " class=evals-pass", "FAIL": " class=evals-fail"}.get(result, "")
    return (
        f'<tr data-metric="{text(path)}"><th>{text(path)}</th>'
        f'<td class=evals-v data-value="{_data(leaf.get("value"))}">{text(fmt_value(leaf))}</td>'
        f'<td class=evals-ci data-low="{_data(low)}" data-high="{_data(high)}">{text(fmt_ci(leaf))}</td>'
        f'<td class=evals-n>{text(leaf.get("n", ""))}</td>'
        f"<td class=evals-gate>{text(gate)}</td><td{cls}>{text(result)}</td></tr>"
    )


_METRIC_HEAD = "<tr><th>metric</th><th>value</th><th>95% CI</th><th>n</th><th>gate</th><th>result</th></tr>"


def metrics_table(suite: Mapping[str, Any]) -> str:
    gates = _gates_by_metric(suite.get("gates") or [])
    top: list[str] = []
    nested: list[str] = []
    for path, leaf in flatten(suite.get("metrics") or {}):
        row = _metric_row(path, leaf, gates.get(path, []))
        (nested if "." in path and path not in gates else top).append(row)
    html = f"<table class=evals-metrics>{_METRIC_HEAD}{''.join(top)}</table>"
    if nested:
        html += (
            f"<details class=evals-nested><summary>{len(nested)} nested metrics "
            f"(per class, per task, baselines...)</summary>"
            f"<table class=evals-metrics>{_METRIC_HEAD}{''.join(nested)}</table></details>"
        )
    return html


def gates_table(suite: Mapping[str, Any]) -> str:
    gates = suite.get("gates") or []
    if not gates:
        return "<p class=evals-note>No gates: this suite reports its metrics without a pass/fail threshold.</p>"
    rows = []
    for g in gates:
        sign = ">=" if g["op"] == "min" else "<="
        value = "undefined" if g.get("value") is None else f"{g['value']:.4g}"
        verdict = "pass" if g["passed"] else "FAIL"
        rows.append(
            f'<tr data-gate="{text(g["metric"])}"><th>{text(g["metric"])}</th>'
            f'<td>{text(sign)} {text(format(g["threshold"], "g"))}</td>'
            f'<td data-value="{_data(g.get("value"))}">{text(value)}</td>'
            f'<td class=evals-{"pass" if g["passed"] else "fail"}>{verdict}</td>'
            f'<td>{text(g.get("reason") or "")}</td></tr>'
        )
    head = "<tr><th>gate</th><th>required</th><th>value</th><th>result</th><th>note</th></tr>"
    return f"<table class=evals-gates>{head}{''.join(rows)}</table>"


#: Flipped cases shown per direction in a suite's "vs baseline" section (all in the JSON).
BASELINE_FLIPS = 200


def baseline_section(suite: Mapping[str, Any]) -> str:
    """This run against ``--evals-baseline``: the regression gates with their paired
    tests, then the cases that flipped, the baseline's evidence beside this run's."""
    block = suite.get("baseline")
    if not block:
        return ""
    if block.get("error"):
        return f"<div class=evals-baseline><h4>vs baseline</h4><p class=evals-fail>{text(block['error'])}</p></div>"
    notes = [f"{int(block.get('paired', 0)):,} paired cases"]
    for key, label in (("unpaired_current", "only in this run"), ("unpaired_baseline", "only in the baseline"),
                       ("error_in_one_run", "erroring in one run")):
        if block.get(key):
            notes.append(f"{len(block[key]):,} {label}")
    if block.get("note"):
        notes.append(str(block["note"]))
    rows = []
    for g in block.get("gates") or []:
        change = ""
        if g.get("diff") is not None:
            change = f"{g['baseline']:.4f} → {g['current']:.4f} ({g['diff']:+.4f})"
        ci = f"[{g['ci_low']:+.4f}, {g['ci_high']:+.4f}]" if g.get("ci_low") is not None else ""
        p = f"{g['p_value']:.3g}" if g.get("p_value") is not None else ""
        status = str(g.get("status", ""))
        rows.append(
            f'<tr data-regression="{text(g.get("metric"))}"><th>{text(g.get("metric"))}</th>'
            f"<td>{text(str(g.get('op', '')).replace('_', ' '))} {text(format(g.get('margin', 0), 'g'))}</td>"
            f"<td>{text(change)}</td><td>{text(ci)}</td><td>{text(p)}</td><td>{text(g.get('method', ''))}</td>"
            f'<td class=evals-{"fail" if status == "failed" else "pass"}>{text(status)}</td>'
            f"<td>{text(g.get('reason') or '')}</td></tr>"
        )
    head = ("<tr><th>metric</th><th>gate</th><th>change</th><th>95% CI of change</th><th>p</th>"
            "<th>test</th><th>result</th><th>note</th></tr>")
    gates = f"<table class=evals-regressions>{head}{''.join(rows)}</table>" if rows else ""
    flips = []
    for key, title in (("newly_failing", "Newly failing"), ("newly_passing", "Newly passing")):
        cases = block.get(key) or []
        if not cases:
            continue
        body = "".join(
            f'<tr data-flip="{text(c.get("case_id"))}"><th>{text(c.get("case_id"))}</th>'
            f"<td>{text(c.get('baseline'))}<br>{text(c.get('baseline_message') or '')}</td>"
            f"<td>{text(c.get('current'))}<br>{text(c.get('message') or '')}</td></tr>"
            for c in cases[:BASELINE_FLIPS]
        )
        more = f"<p class=evals-note>… and {len(cases) - BASELINE_FLIPS:,} more in the JSON summary</p>" if len(cases) > BASELINE_FLIPS else ""
        flips.append(
            f"<details class=evals-flips data-kind={key}><summary>{title}: {len(cases):,}</summary>"
            f"<table><tr><th>case</th><th>baseline</th><th>this run</th></tr>{body}</table>{more}</details>"
        )
    return (
        f"<div class=evals-baseline><h4>vs baseline</h4><p class=evals-note>{text('; '.join(notes))}</p>"
        + gates + "".join(flips) + "</div>"
    )


def counts_line(suite: Mapping[str, Any]) -> str:
    c = suite.get("cases") or {}
    kinds = c.get("errors_by_kind") or {}
    by_kind = f" ({', '.join(f'{k}: {v}' for k, v in kinds.items())})" if kinds else ""
    return (
        f"<p class=evals-counts data-total={int(c.get('total', 0))}>{int(c.get('total', 0)):,} cases: "
        f"<span class=evals-pass>{int(c.get('passed', 0)):,} passed</span>, "
        f"<span class=evals-fail>{int(c.get('failed', 0)):,} failed</span>, "
        f"{int(c.get('errors', 0)):,} errors{text(by_kind)}, {int(c.get('skipped', 0)):,} skipped</p>"
    )


def detail_line(counts: Mapping[str, int] | None) -> str:
    if not counts:
        return ""
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
    return (
        f"<p class=evals-detail-counts data-rows={rows} data-full={full} data-summary={summary} data-over={over}>"
        f"Cases: {text('; '.join(parts))}. Every case in full: results.jsonl of --evals-report-dir.</p>"
    )


def plot_figures(plots: Sequence[Plot]) -> str:
    if not plots:
        return ""
    figures = []
    for p in plots:
        # An SVG shown through <img> cannot run script, whatever labels it holds.
        src = "data:image/svg+xml;base64," + base64.b64encode(p.svg).decode("ascii")
        figures.append(
            f'<figure class=evals-plot data-plot="{text(p.name)}"><img alt="{text(p.title)}" src="{src}">'
            f"<figcaption>{text(p.title)}</figcaption></figure>"
        )
    return f"<div class=evals-plots>{''.join(figures)}</div>"


def suite_section(
    suite: Mapping[str, Any], index: int, plots: Sequence[Plot], detail: Mapping[str, int] | None
) -> str:
    verdict = "PASSED" if suite.get("passed") else "FAILED"
    cls = "evals-pass" if suite.get("passed") else "evals-fail"
    problems = "".join(f"<li>{text(p)}</li>" for p in suite.get("problems") or [])
    warnings = "".join(f"<li>Warning: {text(w)}</li>" for w in suite.get("warnings") or [])
    generated = suite.get("generated_path")
    return (
        f'<section class=evals-suite id=evals-suite-{index} data-suite="{text(suite.get("suite"))}">'
        f'<h3><span class="{cls} evals-verdict">{verdict}</span> {text(suite.get("name"))} '
        f'<small>[{text(suite.get("task"))}] {text(suite.get("suite"))}</small></h3>'
        + (f"<p class=evals-what>{text(suite.get('what'))}</p>" if suite.get("what") else "")
        + counts_line(suite)
        + metrics_table(suite)
        + gates_table(suite)
        + baseline_section(suite)
        + (f"<ul class=evals-problems>{problems}</ul>" if problems else "")
        + (f"<ul class=evals-warnings>{warnings}</ul>" if warnings else "")
        + (f"<p class=evals-note>Generated outputs: {text(generated)}</p>" if generated else "")
        + detail_line(detail)
        + plot_figures(plots)
        + "</section>"
    )


def _scalar(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def llm_section(llm: Mapping[str, Any] | None) -> str:
    if not llm:
        return ""
    rows = []
    for key, value in llm.items():
        if key == "judge_line" or value is None or value == "" or any(w in key.lower() for w in _SECRET_WORDS):
            continue
        rows.append(f'<tr data-key="{text(key)}"><th>{text(key)}</th><td>{text(_scalar(value))}</td></tr>')
    line = llm.get("judge_line")
    head = f"<p class=evals-judge>{text(line)}</p>" if line else ""
    return (
        f"<div class=evals-llm><h3>Model, judge and usage</h3>{head}"
        f"<details><summary>requests, cache, tokens, cost</summary><table class=evals-kv>{''.join(rows)}</table></details></div>"
    )


def run_section(
    summary: Mapping[str, Any],
    plots: Mapping[str, Sequence[Plot]],
    detail: Mapping[str, Mapping[str, int]],
    report_dir: str | None,
    json_path: str | None,
) -> str:
    suites = list(summary.get("suites") or [])
    verdict = "PASSED" if summary.get("passed") else "FAILED"
    cls = "evals-pass" if summary.get("passed") else "evals-fail"
    files = []
    if json_path:
        files.append(f"JSON summary: {text(json_path)}")
    if report_dir:
        files.append(f"result files: {text(report_dir)}")
    note = summary.get("exit_note")
    toc = "".join(
        f'<li><a href="#evals-suite-{i}">{text(s.get("name"))}</a> '
        f'<span class={"evals-pass" if s.get("passed") else "evals-fail"}>{"passed" if s.get("passed") else "FAILED"}</span></li>'
        for i, s in enumerate(suites)
    )
    body = "".join(
        suite_section(s, i, plots.get(str(s.get("suite")), []), detail.get(str(s.get("suite"))))
        for i, s in enumerate(suites)
    )
    return (
        f"<div id=evals-summary data-passed={'true' if summary.get('passed') else 'false'}>"
        f"<h2>Evaluation summary: <span class={cls}>{verdict}</span></h2>"
        f"<p>{len(suites)} suite(s). {' · '.join(files)}</p>"
        + (f"<p class=evals-note>{text(note)}</p>" if note else "")
        + f"<ul class=evals-toc>{toc}</ul>"
        + llm_section(summary.get("llm"))
        + body
        + "</div>"
    )


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
    opened = " open" if left_out else ""
    return (
        f"<details id=evals-cases class=evals-cases{opened} data-count={count} data-left-out={left_out}>"
        f"<summary><strong>Case list</strong> ({count:,} cases): search and filter every case</summary>"
        f"<p class=evals-note>{text(note)}</p><div class=evals-cases-body></div></details>"
    )
