"""pytest-html integration: result-table columns, case details, the summary section.

pytest-html 4 builds its table in the browser from HTML strings it stores per row (it
does not escape the test id) and inserts "html" extras and logs as markup. So this
plugin writes every cell itself, from ``templates/cells.jinja2`` (autoescaped); keeps case details out of pytest-html's row
data, in the compact store of :mod:`pytest_evals.reports.detail_store`, rendered with text
nodes by ``assets/report.js`` when a row is opened (and only when it scrolls into
view, so a report of 35,000 rows opens quickly); drops the failure text from a case
row's log (the detail shows it) and caps captured output.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from importlib import resources
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.hardening import redaction
from pytest_evals.model.case_result import REPORT_ATTR
from pytest_evals.model.errors import ErrorKind
from pytest_evals.output.html_templating import macros
from pytest_evals.reports.case_detail import Level, build_entry
from pytest_evals.reports.detail_store import DetailStore

if TYPE_CHECKING:
    from pytest_evals.reports.report_state import DetailMode, ReportState


#: Bytes of page that are not rows or details (pytest-html's CSS/JS, our summary).
PAGE_OVERHEAD = 400_000
#: pytest-html's per-row JSON keys around the cells (result, testId, duration, extras, log).
ROW_OVERHEAD = 160

_COLUMNS = (
    ("suite", "Suite", True),
    ("case", "Case", False),
    ("task", "Task", False),
    ("scores", "Scores", False),
    ("verdict", "Verdict", True),
)
_TEST_ID_CELL = re.compile(r'^<td class="col-testId">.*</td>$', re.S)
_PLAIN_CELL = re.compile(r'^<td class="(col-result|col-duration|col-links)">(.*)</td>$', re.S)


_PACKAGE = "pytest_evals.reports"


def _cells() -> Any:
    return macros(_PACKAGE, "cells.jinja2")


def header_cells() -> list[str]:
    cells = _cells()
    return [str(cells.header(key, label, sortable)) for key, label, sortable in _COLUMNS]


def case_cells(suite: str, key: int, data: dict[str, Any]) -> list[str]:
    """The plugin's cells of a case row (one template call, split into cells)."""
    row = str(_cells().row(suite, key, data.get("case_id"), data.get("task"),
                           scores_text(data.get("scores") or {}), verdict_text(data)))
    # Autoescaped text never contains "<", so "</td>" only ends the template's cells.
    return [cell + "</td>" for cell in row.split("</td>")[:-1]]


def _fmt_score(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def scores_text(scores: dict[str, Any], limit: int = 4) -> str:
    items = list(scores.items())
    shown = ", ".join(f"{k} {_fmt_score(v)}" for k, v in items[:limit])
    return shown + (f", +{len(items) - limit}" if len(items) > limit else "")


def verdict_text(result: dict[str, Any], width: int = 90) -> str:
    status = result.get("status")
    message = str(result.get("message") or "").strip().splitlines()
    first = message[0] if message else ""
    if len(first) > width:
        first = first[: width - 1] + "…"
    if status == "passed":
        return "pass"
    if status == "failed":
        return f"fail: {first}" if first else "fail"
    if status == "error":
        kind = result.get("error_kind") or ErrorKind.EXCEPTION
        return f"error [{kind}]: {first}" if first else f"error [{kind}]"
    return f"{status}: {first}" if first else str(status)


def _estimate_row(cells: list[str]) -> int:
    # The row's JSON inside pytest-html's HTML attribute: quotes and brackets become entities.
    return len(html_lib.escape(json.dumps(cells, ensure_ascii=False))) + ROW_OVERHEAD


def asset(name: str) -> str:
    return resources.files("pytest_evals.reports").joinpath("assets", name).read_text(encoding="utf-8")


class HtmlReport:
    """Registered on the controller when ``--html`` is given (pytest-html present)."""

    def __init__(self, config: pytest.Config, state: ReportState) -> None:
        self.config = config
        self.state = state
        self.mode: DetailMode = state.detail_mode
        self.store = DetailStore()
        self.rows_bytes = 0
        self.rows_kept = 0
        self.expected_rows = 0
        self.max_bytes = int(state.max_mb * 1_000_000)
        self.detail_counts: dict[str, dict[str, int]] = {}
        #: Case rows left out of pytest-html's table, by pytest-html outcome name.
        self.dropped: dict[str, int] = {}
        self.has_video = False
        #: Details of cases whose row pytest-html has not built yet (it builds a test's
        #: rows at its teardown report; the session keeps only light results on reports).
        self.pending_details: dict[str, dict[str, Any]] = {}

    # -- decisions ------------------------------------------------------------------------
    def set_expected(self, n: int) -> None:
        self.expected_rows = max(self.expected_rows, n)

    def _projected(self, extra: int) -> int:
        """The page size if this entry is added and every remaining case gets a row."""
        cap = self.expected_rows if self.mode == "full" else min(self.expected_rows, self.state.max_rows)
        remaining = max(0, cap - self.rows_kept)
        avg = self.rows_bytes / self.rows_kept if self.rows_kept else 900
        return PAGE_OVERHEAD + self.rows_bytes + int(remaining * avg) + self.store.embedded_size() + extra

    def _row_and_level(self, status: str) -> tuple[bool, Level]:
        """Whether the case gets a table row, and how much detail it keeps."""
        bad = status in ("failed", "error")
        if self.mode == "full":
            return True, "full"
        if self.mode == "auto" and self.expected_rows <= self.state.max_rows:
            return True, "full"
        # Large run (or "failures"): rows for failures and errors only, up to the cap;
        # the rest are entries of the report's case list.
        return bad and self.rows_kept < self.state.max_rows, "full" if bad else "summary"

    # -- pytest hooks -------------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.has_video:
            self.has_video = any(
                isinstance(e, dict) and e.get("format_type") == "video" for e in getattr(report, "extras", None) or []
            )

    @pytest.hookimpl
    def pytest_evals_case_result(self, nodeid: str, result: Any) -> None:
        self.pending_details[nodeid] = result.details

    # -- pytest-html hooks ------------------------------------------------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        at = next((i + 1 for i, c in enumerate(cells) if 'data-column-type="testId"' in str(c)), len(cells))
        cells[at:at] = header_cells()

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[Any]) -> None:
        data = getattr(report, REPORT_ATTR, None)
        if not isinstance(data, dict):
            at = self._escape_test_id(report, cells)
            cells[at:at] = [str(_cells().empty(key)) for key, _, _ in _COLUMNS]
            return
        details = self.pending_details.pop(report.nodeid, None)
        if details is not None:
            data = {**data, "details": details}
        status = str(data.get("status"))
        rowed, level = self._row_and_level(status)
        suite_id = str(data.get("suite", ""))
        suite = self.state.suite_info(suite_id)
        counts = self.detail_counts.setdefault(suite_id, {"rows": 0, "full": 0, "summary": 0, "over_budget": 0})
        entry = self._entry(report, data, level, suite.name, suite.thresholds)
        if level == "full" and self._projected(self._entry_cost(entry)) > self.max_bytes:
            entry = self._entry(report, data, "summary", suite.name, suite.thresholds)
            counts["over_budget"] += 1
        else:
            counts[level] += 1
        key = self.store.add(entry)
        if not rowed:
            outcome = "error" if status == "error" else report.outcome
            self.dropped[outcome] = self.dropped.get(outcome, 0) + 1
            cells.clear()  # pytest-html leaves a row with no cells out of its table
            return
        # Only rows that stay are rendered (a large run keeps 2,000 of 35,000).
        at = self._escape_test_id(report, cells)
        for i, cell in enumerate(cells):
            m = _PLAIN_CELL.match(cell) if isinstance(cell, str) else None
            if m:  # the same cell without quotes: 10 bytes less per cell once escaped
                # m.group(2) is pytest-html's own markup for its cell, kept as it was.
                cells[i] = str(_cells().plain(m.group(1), m.group(2)))
        cells[at:at] = case_cells(suite.name, key, data)
        counts["rows"] += 1
        self.rows_bytes += _estimate_row([str(c) for c in cells])
        self.rows_kept += 1

    @staticmethod
    def _escape_test_id(report: pytest.TestReport, cells: list[Any]) -> int:
        """Rewrite pytest-html's test-id cell from the template; returns the index after it."""
        for i, cell in enumerate(cells):
            if isinstance(cell, str) and _TEST_ID_CELL.match(cell):
                # pytest-html inserts the node id unescaped; a case id from the data
                # could otherwise carry markup into the page.
                test_id = report.nodeid if report.when == "call" else f"{report.nodeid}::{report.when}"
                cells[i] = str(_cells().test_id(test_id))
                return i + 1
        return len(cells)

    def _entry(
        self, report: pytest.TestReport, data: dict[str, Any], level: Level, suite_name: str, thresholds: dict[str, float]
    ) -> dict[str, Any]:
        entry = build_entry(data, level=level, field_chars=self.state.field_chars, thresholds=thresholds, nodeid=report.nodeid)
        entry["sn"] = suite_name
        entry["vd"] = verdict_text(data)
        entry["ss"] = scores_text(data.get("scores") or {})
        return entry

    def _entry_cost(self, entry: dict[str, Any]) -> int:
        raw = len(json.dumps(entry, ensure_ascii=False, default=str))
        if self.store.raw_size < self.store.raw_limit:
            return raw
        # Compressed: assume the ratio seen so far (at least 1:1 in the worst case).
        ratio = max(1.0, self.store.raw_size / max(1, self.store.embedded_size()))
        return int(raw / ratio)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_html(self, report: pytest.TestReport, data: list[str]) -> None:
        if not isinstance(getattr(report, REPORT_ATTR, None), dict):
            return
        # The failure text is the case's message, shown in its detail; keep only captured
        # output (already escaped by pytest-html), capped. The failure text is escaped the
        # way pytest-html escaped it, to recognise it (nothing here is written as HTML).
        longrepr = html_lib.escape(report.longreprtext) + "\n" if report.longreprtext else None
        kept = [d for d in data if d != longrepr and d != "No log output captured."]
        limit = self.state.log_chars
        out: list[str] = []
        used = 0
        for d in kept:
            if used >= limit:
                out.append(f"[... captured output cut at {limit:,} characters (evals_html_log_chars)]")
                break
            piece = d[: limit - used]
            used += len(piece)
            out.append(piece)
        data[:] = out

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list[str], summary: list[str], postfix: list[str], session: pytest.Session) -> None:
        if self.store.count or self.state.run_summary() is not None:
            summary.append(self.summary_html())

    # -- summary ------------------------------------------------------------------------
    def summary_html(self) -> str:
        from markupsafe import Markup

        from pytest_evals.reports.summary_html import case_list, run_section

        run = self.state.run_summary()
        section = ""
        if run is not None:
            # Scrubbed like every file's JSON is when written (a suite's `what` may quote a key).
            run = redaction.scrub_obj(run)
            report_dir = self.state.report_dir
            section = run_section(
                run,
                self.state.plots(),
                self.detail_counts,
                str(report_dir) if report_dir else None,
                self.config.getoption("evals_json", None),
            )
        page = macros(_PACKAGE, "report_summary.jinja2")
        # Markup rendered by this package's templates, escaped there; the store's payload
        # (megabytes) is joined in once, not passed through a template.
        opening, payload, closing = self.store.html_parts(strip_video=not self.has_video, dropped=self.dropped)
        before = page.before(asset("report.css"), Markup(section), Markup(case_list(self.store.count, self.dropped)))
        return "".join((before, opening, payload, closing, page.after(asset("report.js"))))
