"""The HTML matrix of a suite with variants: one self-contained page.

At the top, every metric of every variant with its interval, the paired comparisons,
the best variant and the variant gates (the same text as the terminal's); below, one
row per case with every variant's outcome side by side, and a filter "show only cases
where the variants disagree" (a different status or a different output). The rows are
plain HTML rendered once (no script builds them), so 1,000 cases x 3 variants load in
well under a second; the filters toggle a class or walk the rows once.

Written with ``--evals-variants-html PATH`` (every suite with variants of the run, one
page) and into each such suite's folder of a ``--evals-report-dir`` run
(``<suite>/variants.html``).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.collection.variant_outputs import OUTPUT_KEY
from pytest_evals.hardening import redaction as redact
from pytest_evals.model.case_result import CaseResult
from pytest_evals.output.variant_tables import best_text, comparison_text, matrix_rows

_PATH_KEY = pytest.StashKey[str]()
#: Characters of one output shown in a cell (the JSON summary and result files hold all).
CELL_CHARS = 400

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:20px}h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 8px;vertical-align:top;text-align:left}
th{background:#f3f3f3}table.cases th{position:sticky;top:38px;z-index:1}
td.passed{background:#eaf7ea}td.failed{background:#fdeaea}td.error{background:#fff1d6}td.skipped{background:#eee}
td .st{font-weight:600;font-size:12px;text-transform:uppercase;margin-right:6px}
td .out{white-space:pre-wrap;word-break:break-word}
td .lbl{color:#555;font-size:12px;margin-left:6px;white-space:nowrap}
tr.disagree td:first-child{border-left:4px solid #c60}
table.only-disagree tr.agree{display:none}
tr.hidden{display:none}
.controls{margin:8px 0;position:sticky;top:0;background:#fff;padding:6px 0;z-index:2}
.cmp li{margin:2px 0}.better{color:#080}.worse{color:#b00}
td.num{font-variant-numeric:tabular-nums;white-space:nowrap}
"""

_JS = """
document.querySelectorAll('section.suite').forEach(function(sec){
  var table=sec.querySelector('table.cases');if(!table)return;
  var box=sec.querySelector('input.only'),text=sec.querySelector('input.find'),count=sec.querySelector('.count');
  var rows=table.tBodies[0].rows;
  function update(){
    table.classList.toggle('only-disagree',box.checked);
    var q=text.value.toLowerCase(),shown=0;
    for(var i=0;i<rows.length;i++){
      var r=rows[i],hit=!q||r.textContent.toLowerCase().indexOf(q)>=0;
      r.classList.toggle('hidden',!hit);
      if(hit&&(!box.checked||r.classList.contains('disagree')))shown++;
    }
    count.textContent=shown+' of '+rows.length+' cases shown';
  }
  box.addEventListener('change',update);text.addEventListener('input',update);update();
});
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _label(data: Mapping[str, Any]) -> str | None:
    for key in ("actual", "predicted", "answer", "output", "verdict"):
        if key in data and data[key] is not None:
            value = data[key]
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return None


def output_parts(result: CaseResult | Mapping[str, Any]) -> tuple[str, str]:
    """(what the variant produced for the case, the label its task read from it): the
    raw output the variant's task recorded (``data["variant_output"]``, see
    :mod:`pytest_evals.collection.variant_outputs`) and its ``actual``/``predicted``
    label; without a recorded output, the label alone (else the case's scores)."""
    data = result.data if isinstance(result, CaseResult) else result.get("data") or {}
    scores = result.scores if isinstance(result, CaseResult) else result.get("scores") or {}
    raw = data.get(OUTPUT_KEY)
    label = _label(data)
    if isinstance(raw, str):
        return raw[:CELL_CHARS] + ("…" if len(raw) > CELL_CHARS else ""), ("" if label is None else label[:CELL_CHARS])
    if label is not None:
        return label[:CELL_CHARS], ""
    if scores:
        return ", ".join(f"{k} {v:.3g}" if isinstance(v, (int, float)) else f"{k} {v}"
                         for k, v in list(scores.items())[:4])[:CELL_CHARS], ""
    return "", ""


def output_text(result: CaseResult | Mapping[str, Any]) -> str:
    """The cell's text: the variant's output, then `` -> label`` when the task read one."""
    raw, label = output_parts(result)
    return f"{raw} -> {label}" if label else raw


def _message(result: CaseResult) -> str:
    return (result.message or "").split("\n", 1)[0][:CELL_CHARS]


def case_rows(suite: Mapping[str, Any], results: Iterable[CaseResult]) -> list[dict[str, Any]]:
    """One row per case: its id, its expected value, and each variant's (status, output, message)."""
    block = suite.get("variants") or {}
    names: list[str] = list(block.get("names") or [])
    known = set(names)
    rows: dict[str, dict[str, Any]] = {}
    for r in results:
        if not r.case_id.endswith("]"):
            continue
        base, _, variant = r.case_id[:-1].rpartition("[")
        if variant not in known:
            continue
        row = rows.setdefault(base, {"case": base, "index": r.index, "expected": None, "cells": {}})
        if row["expected"] is None and isinstance(r.data, dict) and "expected" in r.data:
            row["expected"] = r.data["expected"]
        parts = output_parts(r)
        if not parts[0] and r.status in ("error", "skipped"):
            # Nothing was produced: the cell says why (the whole message on hover).
            parts = (_message(r), "")
        row["cells"][variant] = (r.status, parts, _message(r))
    out = sorted(rows.values(), key=lambda row: (row["index"], row["case"]))
    for row in out:
        seen = {(c[0], c[1]) for c in row["cells"].values()}
        row["disagree"] = len(seen) > 1 or len(row["cells"]) < len(names)
    return out


def matrix_html(suite: Mapping[str, Any]) -> str:
    """The suite's matrix (metrics x variants, values with intervals, then cases and
    usage), its paired comparisons, the best variant, the variant gates and the suite's
    reasons: the same text as the terminal's, as HTML."""
    block = suite.get("variants") or {}
    alpha = block.get("alpha", 0.05)
    out = []
    matrix = matrix_rows(suite, verbose=False)
    out.append('<table class="matrix"><thead><tr>' + "".join(f"<th>{_e(c)}</th>" for c in matrix[0]) + "</tr></thead><tbody>")
    for mrow in matrix[1:]:
        out.append("<tr><th>" + _e(mrow[0]) + "</th>" + "".join(f'<td class="num">{_e(c)}</td>' for c in mrow[1:]) + "</tr>")
    out.append("</tbody></table><ul class=\"cmp\">")
    for c in block.get("comparisons") or []:
        cls = {"better": "better", "worse": "worse"}.get(str(c.get("verdict")), "")
        out.append(f'<li class="{cls}">{_e(comparison_text(c))}</li>')
    for b in block.get("best") or []:
        out.append(f"<li><b>{_e(best_text(b, alpha))}</b></li>")
    for g in block.get("gates") or []:
        out.append(f'<li class="{"better" if g.get("passed") else "worse"}">{_e(str(g.get("verdict") or g.get("status")).upper())} '
                   f'{_e(g.get("text") or g.get("reason"))}</li>')
    out.append("</ul>")
    for reason in suite.get("reasons") or []:
        out.append(f'<p class="worse">{_e(reason)}</p>')
    return "\n".join(out)


def suite_section(suite: Mapping[str, Any], results: Sequence[CaseResult]) -> str:
    block = suite.get("variants") or {}
    names: list[str] = list(block.get("names") or [])
    out = [f'<section class="suite"><h2>{_e(suite.get("name"))} <small>[{_e(suite.get("task"))}] '
           f'{_e(suite.get("suite"))}: {"PASSED" if suite.get("passed") else "FAILED"}</small></h2>']
    out.append(matrix_html(suite))
    rows = case_rows(suite, results)
    disagree = sum(1 for r in rows if r["disagree"])
    has_expected = any(r["expected"] is not None for r in rows)
    out.append(f'<div class="controls"><label><input type="checkbox" class="only"> show only cases where variants '
               f'disagree ({disagree} of {len(rows)})</label> &nbsp; <input type="search" class="find" '
               f'placeholder="filter cases" aria-label="filter cases"> &nbsp; <span class="count"></span></div>')
    head = ["case", *(["expected"] if has_expected else []), *(f"{n} (ref)" if n == block.get("reference") else n for n in names)]
    out.append('<table class="cases"><thead><tr>' + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead><tbody>")
    for row in rows:
        cls = "disagree" if row["disagree"] else "agree"
        cells = [f"<td>{_e(row['case'])}</td>"]
        if has_expected:
            cells.append(f"<td>{_e(json.dumps(row['expected']) if not isinstance(row['expected'], str) else row['expected'])}</td>")
        for n in names:
            got = row["cells"].get(n)
            if got is None:
                cells.append('<td class="skipped"><span class="st">not run</span></td>')
                continue
            status, (raw, label), message = got
            title = f' title="{_e(message)}"' if message else ""
            shown = f'<span class="lbl">-&gt; {_e(label)}</span>' if label else ""
            cells.append(f'<td class="{_e(status)}"{title}><span class="st">{_e(status)}</span>'
                         f'<span class="out">{_e(raw)}</span>{shown}</td>')
        out.append(f'<tr class="{cls}">' + "".join(cells) + "</tr>")
    out.append("</tbody></table></section>")
    return "\n".join(out)


def render_page(suites: Sequence[tuple[Mapping[str, Any], Sequence[CaseResult]]], title: str = "pytest_evals variants") -> str:
    body = "\n".join(suite_section(s, rs) for s, rs in suites)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f"<style>{_CSS}</style></head><body><h1>{_e(title)}</h1>\n{body}\n<script>{_JS}</script></body></html>\n")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("evals").addoption(
        "--evals-variants-html", metavar="PATH",
        help="write the variants of every suite with variants side by side as one HTML page (docs/variants.md)",
    )


@pytest.hookimpl(trylast=True)
def pytest_evals_write_outputs(config: pytest.Config, summary: dict[str, Any], report: Any) -> None:
    path = config.getoption("evals_variants_html", None)
    if not path:
        return
    suites = [s for s in summary.get("suites") or [] if s.get("variants")]
    if not suites:
        return
    by_suite = report.results_by_suite()
    # Every text on the page is masked once more as a whole: a secret in a case's
    # message or a suite name must not reach the file either.
    page = redact.scrub(render_page([(s, by_suite.get(s["suite"], [])) for s in suites]))
    from pytest_evals.output.artifacts import atomic_write

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, page)
    config.stash[_PATH_KEY] = str(target)


def pytest_evals_suite_folder(config: pytest.Config, folder: Path, suite: dict[str, Any],
                              results: Sequence[CaseResult]) -> dict[str, str] | None:
    if not suite.get("variants"):
        return None
    from pytest_evals.output.artifacts import atomic_write

    atomic_write(folder / "variants.html",
                 redact.scrub(render_page([(suite, results)], f"{suite.get('name')}: variants")))
    return {"variants_html": f"{folder.name}/variants.html"}


@pytest.hookimpl(optionalhook=True)
def pytest_html_results_summary(prefix: list[str], summary: list[str], postfix: list[str],
                                session: pytest.Session) -> None:
    """pytest-html's ``--html`` report: the variant matrix of every suite with variants,
    after the run's own summary section."""
    from pytest_evals.reports.variant_pytest_html import summary_section

    section = summary_section(session.config, matrix_html)
    if section:
        postfix.append(section)


def pytest_evals_terminal_summary(config: pytest.Config, terminalreporter: pytest.TerminalReporter) -> None:
    path = config.stash.get(_PATH_KEY, None)
    if path:
        terminalreporter.write_line(f"variants HTML: {path}")
