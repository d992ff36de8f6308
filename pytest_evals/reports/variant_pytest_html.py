"""The variant matrix inside pytest-html's ``--html`` report.

pytest-html asks plugins for extra summary markup (``pytest_html_results_summary``)
when it writes the page at the end of the session, after the run's summary exists.
Each suite with variants gets its matrix (every metric of every variant with its
interval, cases and usage), its paired comparisons, the best variant and the variant
gates: the text of the terminal and of ``--evals-variants-html``
(:func:`~pytest_evals.reports.variant_matrix_html.matrix_html`), escaped, under
styles scoped to this section so pytest-html's own tables are untouched. The per-case
outputs stay in pytest-html's own rows and in the variants page (whose path is
linked when one was written): repeating 1,000 cases x 3 variants here would double a
report pytest-html already renders row by row.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from pytest_evals.hardening import redaction as redact

_CSS = """
.evals-variants{margin:12px 0}
.evals-variants h3{font-size:16px;margin:14px 0 4px}
.evals-variants table.matrix{border-collapse:collapse;margin:6px 0}
.evals-variants table.matrix td,.evals-variants table.matrix th{border:1px solid #ccc;padding:3px 8px;text-align:left}
.evals-variants table.matrix th{background:#f3f3f3}
.evals-variants td.num{font-variant-numeric:tabular-nums;white-space:nowrap}
.evals-variants ul.cmp li{margin:2px 0}.evals-variants .better{color:#080}.evals-variants .worse{color:#b00}
"""


def summary_section(config: pytest.Config, matrix_html: Callable[[Mapping[str, Any]], str]) -> str | None:
    """The section's HTML (None: no suite of the run has variants); ``matrix_html``
    renders one suite's matrix and verdicts (the variants page's own)."""
    from pytest_evals.controller.run_report import get_run_report

    report = get_run_report(config)
    if report is None:
        return None
    suites: list[dict[str, Any]] = [s for s in report.summary.get("suites") or [] if s.get("variants")]
    if not suites:
        return None
    out = [f"<style>{_CSS}</style>", '<div class="evals-variants"><h2>Variants side by side</h2>',
           "<p>Each variant's metrics with their 95% intervals; every variant paired with the reference on the "
           "same cases (Holm-adjusted across variants and metrics).</p>"]
    page = config.getoption("evals_variants_html", None)
    if page:
        out.append(f"<p>Every case with every variant's output: {html.escape(str(page))}</p>")
    for s in suites:
        block = s.get("variants") or {}
        out.append(f'<section class="evals-variant-suite"><h3>{html.escape(str(s.get("name")))} '
                   f'<small>[{html.escape(str(s.get("task")))}] reference {html.escape(str(block.get("reference")))}: '
                   f'{"PASSED" if s.get("passed") else "FAILED"}</small></h3>')
        out.append(matrix_html(s))
        out.append("</section>")
    out.append("</div>")
    # As every file of the run: a suite's text may quote a secret.
    return redact.scrub("\n".join(out))
