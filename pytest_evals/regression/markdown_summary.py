"""A GitHub-flavoured Markdown summary of a run, for ``$GITHUB_STEP_SUMMARY`` and PR comments.

Built from the public JSON summary only (what ``--evals-json`` writes), so it says
nothing the JSON does not. Every cell taken from data is escaped: case ids and
messages are user text and must not break the table or inject markup.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_evals.model import value_format as fmt

#: Flipped cases listed per suite and direction before "... and N more".
MAX_FLIPS = 20
_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")


def cell(value: Any, limit: int = 160) -> str:
    text = "" if value is None else str(value)
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return _SPECIAL.sub(r"\\\1", text)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _verdict(s: Mapping[str, Any]) -> str:
    """A suite's (or the run's) verdict; PARTIAL: passed on part of its population
    (``--evals-allow-partial``)."""
    if not s.get("passed"):
        return "❌ failed"
    return "⚠️ PARTIAL" if s.get("partial") else "✅ passed"


def _suite(s: Mapping[str, Any]) -> list[str]:
    verdict = _verdict(s)
    undecided = len((s.get("baseline") or {}).get("inconclusive") or [])
    if undecided:
        verdict += f", {undecided} inconclusive regression gate(s)"
    c = s.get("cases") or {}
    lines = [f"### {cell(s.get('name'))} ({cell(s.get('task'))}): {verdict}", ""]
    lines.append(
        f"{c.get('total', 0)} cases: {c.get('passed', 0)} passed, {c.get('failed', 0)} failed, "
        f"{c.get('errors', 0)} errors" + (f", {c['skipped']} skipped" if c.get("skipped") else "")
    )
    lines.append("")
    if s.get("partial"):
        lines += [f"> ⚠️ **PARTIAL**: {cell(fmt.population_text(c))}; the gates cover only those cases", ""]
    gated = fmt.gates_by_metric(s.get("gates") or [])
    rows = []
    for path, m in fmt.walk(s.get("metrics") or {}):
        if "." in path and path not in gated:
            continue
        value = fmt.metric_value(m.get("value"), m.get("kind"), m.get("reason"))
        ci = fmt.metric_interval(m.get("value"), m.get("kind"), m.get("ci_low"), m.get("ci_high"))
        gate_text, result = fmt.gate_cells(path, gated.get(path, []), unicode=True)
        rows.append([cell(path), cell(value), ci, cell(gate_text), "**FAIL**" if result == "FAIL" else result])
    if rows:
        lines += _table(["metric", "value", "95% CI", "gate", "result"], rows)
    if s.get("variants"):
        from pytest_evals.output.variant_tables import markdown_lines

        lines += [*markdown_lines(s), ""]
    block = s.get("baseline")
    if block:
        lines += _baseline(block)
    reasons = [r for r in s.get("reasons", [])]
    if reasons:
        lines += [f"- {cell(r, 400)}" for r in reasons] + [""]
    return lines


def _baseline(block: Mapping[str, Any]) -> list[str]:
    if block.get("error"):
        return [f"**vs baseline**: {cell(block['error'], 400)}", ""]
    lines = [f"**vs baseline**: {block.get('paired', 0)} paired cases"]
    extra = []
    if block.get("cases") is not None and block.get("cases") != block.get("paired", 0):
        extra.append(f"of {block['cases']} in this run")
    for key, label in (("unpaired_current", "only in this run"), ("unpaired_baseline", "only in the baseline"),
                       ("error_in_one_run", "erroring in one run")):
        if block.get(key):
            extra.append(f"{len(block[key])} {label}")
    lines[-1] += (" (" + ", ".join(extra) + ")" if extra else "") + ""
    lines.append("")
    if block.get("path"):
        chosen = f" ({cell(block['chosen'])})" if block.get("chosen") else ""
        lines += [f"Baseline: `{str(block['path']).replace('`', '')}`{chosen}", ""]
    allowed = " (allowed by --evals-baseline-allow-changes)" if block.get("changes_allowed") else ""
    changed = block.get("changed_inputs") or []
    if changed:
        shown = ", ".join(cell(c) for c in changed[:MAX_FLIPS]) + (" …" if len(changed) > MAX_FLIPS else "")
        lines += [f"- ⚠️ inputs changed since the baseline{allowed}: {len(changed)} case id(s), not paired: {shown}"]
    for change in block.get("settings_changes") or []:
        lines.append(f"- ⚠️ setting changed since the baseline{allowed}: {cell(change, 200)}")
    for note in (block.get("settings_note"), block.get("note")):
        if note:
            lines.append(f"- note: {cell(note, 400)}")
    if lines[-1] != "":
        lines.append("")
    rows = []
    for g in block.get("gates", []):
        ci = fmt.signed_interval(g.get("ci_low"), g.get("ci_high"))
        change = fmt.change(g.get("baseline"), g.get("current"), g.get("diff"))
        p = fmt.p_value(g.get("p_value"))
        status = fmt.regression_result(g.get("status"), g.get("verdict"))
        if g.get("status") == "failed":
            status = f"**FAIL** ({status})"
        rows.append([cell(g.get("metric")), fmt.margin(str(g.get("op", "")), g.get("margin", 0)), change, ci, p, status,
                     cell(g.get("reason"), 300)])
    if rows:
        lines += _table(["metric", "gate", "change", "95% CI of change", "p", "result", "note"], rows)
    for key, title in (("newly_failing", "Newly failing"), ("newly_passing", "Newly passing")):
        flips = block.get(key) or []
        if not flips:
            continue
        lines.append(f"<details><summary>{title}: {len(flips)}</summary>")
        lines.append("")
        for f in flips[:MAX_FLIPS]:
            msg = f" — {cell(f.get('message'))}" if f.get("message") else ""
            lines.append(f"- `{str(f.get('case_id')).replace('`', '')}`{msg}")
        if len(flips) > MAX_FLIPS:
            lines.append(f"- … and {len(flips) - MAX_FLIPS} more (see the JSON summary)")
        lines += ["", "</details>", ""]
    return lines


def render(summary: Mapping[str, Any], *, html_report: str | None = None) -> str:
    """The Markdown text of a run summary."""
    suites = summary.get("suites") or []
    ok = summary.get("passed", False)
    lines = [f"## pytest_evals: {_verdict({'passed': ok, 'partial': summary.get('partial')})}", ""]
    rows = []
    for s in suites:
        c = s.get("cases") or {}
        verdict = ("PARTIAL" if s.get("partial") else "pass") if s.get("passed") else "**FAIL**"
        rows.append([cell(s.get("name")), cell(s.get("task")), str(c.get("total", 0)), str(c.get("failed", 0)),
                     str(c.get("errors", 0)), verdict])
    if rows:
        lines += _table(["suite", "task", "cases", "failed", "errors", "verdict"], rows)
    if html_report:
        lines += [f"HTML report: [{cell(html_report)}]({html_report.replace(' ', '%20').replace(')', '%29')})", ""]
    for warning in summary.get("warnings") or []:
        lines.append(f"> ⚠️ {cell(warning, 400)}")
    if summary.get("warnings"):
        lines.append("")
    for s in suites:
        lines += _suite(s)
    return "\n".join(lines).rstrip() + "\n"
