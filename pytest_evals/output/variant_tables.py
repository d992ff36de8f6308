"""A suite's variants side by side, as text: the terminal matrix, Markdown, JUnit properties.

Everything is read from the suite's JSON entry (its ``metrics`` tree has one branch per
variant; its ``variants`` section the counts, usage, paired comparisons, best variant
and variant gates), so the terminal, the Markdown summary and JUnit say the same.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from pytest_evals.model import value_format as fmt

Style = dict[str, bool]


def _leaves(tree: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    for key, node in tree.items():
        path = f"{prefix}{key}"
        if isinstance(node, Mapping) and "kind" in node and "value" in node:
            yield path, node
        elif isinstance(node, Mapping):
            yield from _leaves(node, path + ".")


def metric_cell(m: Mapping[str, Any] | None) -> str:
    """``0.800 [0.610, 0.920]``: a metric's value and interval as every output shows them."""
    if m is None:
        return "-"
    value = fmt.metric_value(m.get("value"), m.get("kind", ""), m.get("reason"))
    ci = fmt.metric_interval(m.get("value"), m.get("kind", ""), m.get("ci_low"), m.get("ci_high"))
    return f"{value} {ci}".strip() if ci and ci != "-" else value


def _num(x: Any, signed: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x:+.4f}" if signed else f"{x:.4f}"


def cost_cell(usage: Mapping[str, Any]) -> str:
    """A variant's cost in USD; requests of unknown price are said, never shown as $0:
    ``n/a (4 unpriced requests)``, or ``0.0123 (+2 unpriced requests)`` beside priced ones."""
    unpriced = int(usage.get("unpriced_requests") or 0)
    cost = usage.get("cost")
    noun = "request" if unpriced == 1 else "requests"
    if cost is None:
        return f"n/a ({unpriced} unpriced {noun})" if unpriced else "n/a"
    return f"{cost:.4f} (+{unpriced} unpriced {noun})" if unpriced else f"{cost:.4f}"


def _p(x: Any) -> str:
    return "-" if x is None else f"{x:.3g}"


def matrix_rows(suite: Mapping[str, Any], verbose: bool = False) -> list[list[str]]:
    """Metric rows x variant columns (header first), then cases, errors and usage rows."""
    block = suite.get("variants") or {}
    names: list[str] = list(block.get("names") or [])
    ref = block.get("reference")
    metrics = suite.get("metrics") or {}
    per = {n: dict(_leaves(metrics.get(n) or {})) for n in names}
    compared = set(block.get("compared_metrics") or [])
    gated = {str(g.get("metric", "")).split(".", 1)[-1] for g in suite.get("gates") or []}
    paths: list[str] = []
    for n in names:
        for path, m in per[n].items():
            if path in paths or m.get("kind") == "count":
                continue
            if verbose or "." not in path or path in compared or path in gated:
                paths.append(path)
    header = ["metric", *[f"{n} (ref)" if n == ref else n for n in names]]
    rows = [header]
    for path in paths:
        rows.append([path, *[metric_cell(per[n].get(path)) for n in names]])
    info = block.get("variants") or {}
    rows.append(["cases", *[_cases(info.get(n, {}).get("cases") or {}) for n in names]])
    rows.append(["errors", *[str((info.get(n, {}).get("cases") or {}).get("errors", 0)) for n in names]])
    usage = [info.get(n, {}).get("usage") or {} for n in names]
    rows.append(["requests (cached)", *[f"{u.get('requests', 0)} ({u.get('cache_hits', 0)})" for u in usage]])
    rows.append(["tokens in / out", *[f"{u.get('prompt_tokens', 0)} / {u.get('completion_tokens', 0)}" for u in usage]])
    rows.append(["cost USD", *[cost_cell(u) for u in usage]])
    rows.append(["latency mean / median s", *[
        f"{u['latency_mean_s']:.3f} / {u['latency_median_s']:.3f}" if "latency_mean_s" in u else "-" for u in usage
    ]])
    return rows


def _cases(c: Mapping[str, Any]) -> str:
    return f"{c.get('total', 0)}: {c.get('passed', 0)}P {c.get('failed', 0)}F {c.get('errors', 0)}E"


def comparison_text(c: Mapping[str, Any]) -> str:
    """``big vs mini accuracy: +0.1000 [-0.0500, +0.2500], p = 0.031, Holm 0.093 -> no significant difference``."""
    ci = f" [{_num(c.get('ci_low'), True)}, {_num(c.get('ci_high'), True)}]" if c.get("ci_low") is not None else ""
    disc = ""
    if c.get("only_against") is not None:
        disc = f", discordant {c['only_against']}/{c['only_variant']}"
    det = ""
    if c.get("verdict") == "no significant difference":
        det = (f" (smallest detectable {c['detectable']:.4f})" if c.get("detectable") is not None
               else " (too few paired cases to detect any difference)")
    reason = f" ({c['reason']})" if c.get("reason") else ""
    return (f"{c.get('variant')} vs {c.get('against')} {c.get('metric')}: {_num(c.get('diff'), True)}{ci}, "
            f"p = {_p(c.get('p_value'))}, Holm {_p(c.get('p_holm'))} ({c.get('method')}, {c.get('paired')} paired"
            f"{disc}) -> {c.get('verdict')}{det}{reason}")


def best_text(b: Mapping[str, Any], alpha: Any) -> str:
    metric = b.get("metric")
    if b.get("best"):
        return (f"best on {metric}: {b['best']} (better than every other variant, Holm-adjusted p < {alpha})")
    if b.get("verdict") == "undefined":
        return f"best on {metric}: undefined (fewer than two variants define it)"
    det = (f"; smallest detectable difference {b['detectable']:.4f}" if b.get("detectable") is not None
           else "; too few paired cases to detect any difference" if b.get("against") else "")
    why = f" ({b['reason']})" if b.get("reason") else ""
    lead = f"; highest: {b['candidate']}" if b.get("candidate") else ""
    return f"best on {metric}: no significant difference{why}{lead}{det}"


def terminal_lines(suite: Mapping[str, Any], verbose: bool = False) -> list[tuple[str, Style]]:
    block = suite.get("variants") or {}
    lines: list[tuple[str, Style]] = []
    alpha = block.get("alpha", 0.05)
    lines.append((f"  variants of {suite.get('name')} side by side (reference {block.get('reference')}; "
                  f"paired tests against it, Holm-adjusted across variants and metrics, alpha {alpha:g})", {"bold": True}))
    rows = matrix_rows(suite, verbose)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        lines.append(("    " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip(), {}))
    for c in block.get("comparisons") or []:
        style: Style = {"green": True} if c.get("verdict") == "better" else {"red": True} if c.get("verdict") == "worse" else {}
        lines.append(("    " + comparison_text(c), style))
    best = block.get("best") or []
    primary = block.get("primary_metric")
    for b in best:
        if verbose or b.get("metric") == primary or b.get("best"):
            lines.append(("    " + best_text(b, alpha), {"bold": True}))
    for g in block.get("gates") or []:
        word = str(g.get("verdict") or g.get("status")).upper()
        style = {"green": True} if g.get("passed") and g.get("status") == "passed" else \
            {"yellow": True} if g.get("passed") else {"red": True}
        lines.append((f"    {word} {g.get('text') or g.get('reason')}", style))
    return lines


def markdown_lines(suite: Mapping[str, Any]) -> list[str]:
    """The suite's variant matrix, comparisons, best variant and gates as Markdown."""
    block = suite.get("variants") or {}
    if not block:
        return []
    rows = matrix_rows(suite)
    out = ["", f"**Variants** (reference `{block.get('reference')}`, paired tests, Holm-adjusted, "
               f"alpha {block.get('alpha', 0.05):g})", ""]
    out.append("| " + " | ".join(_md(c) for c in rows[0]) + " |")
    out.append("|" + "---|" * len(rows[0]))
    for row in rows[1:]:
        out.append("| " + " | ".join(_md(c) for c in row) + " |")
    out.append("")
    for c in block.get("comparisons") or []:
        out.append(f"- {_md(comparison_text(c))}")
    for b in block.get("best") or []:
        out.append(f"- **{_md(best_text(b, block.get('alpha', 0.05)))}**")
    for g in block.get("gates") or []:
        out.append(f"- {'✅' if g.get('passed') else '❌'} {_md(str(g.get('text') or g.get('reason')))}")
    return out


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def junit_properties(config: pytest.Config, summary: Mapping[str, Any]) -> None:
    """``evals.<suite>.variants.<v>.vs.<ref>.<metric>.{diff,p_holm,verdict}``, the best
    variant per metric and the variant gates (each variant's metrics are the core's
    ``evals.<suite>.<v>.<metric>`` properties)."""
    from pytest_evals.output.artifacts import junit_xml

    xml = junit_xml(config)
    if xml is None:
        return
    for s in summary.get("suites") or []:
        block = s.get("variants")
        if not block:
            continue
        prefix = f"evals.{s.get('name')}.variants"
        xml.add_global_property(f"{prefix}.reference", str(block.get("reference")))
        for c in block.get("comparisons") or []:
            key = f"{prefix}.{c['variant']}.vs.{c['against']}.{c['metric']}"
            xml.add_global_property(f"{key}.diff", _num(c.get("diff"), True))
            xml.add_global_property(f"{key}.ci", f"{_num(c.get('ci_low'), True)},{_num(c.get('ci_high'), True)}")
            xml.add_global_property(f"{key}.p_holm", _p(c.get("p_holm")))
            xml.add_global_property(f"{key}.verdict", str(c.get("verdict")))
        for b in block.get("best") or []:
            xml.add_global_property(f"{prefix}.best.{b['metric']}", str(b.get("best") or "no significant difference"))
        for g in block.get("gates") or []:
            xml.add_global_property(f"{prefix}.gate.{g['variant']}.{g['kind']}.{g['against']}.{g['metric']}",
                                    str(g.get("verdict") or g.get("status")))
