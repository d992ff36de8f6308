"""The terminal shows the first N failed (and erroring) cases in full, then a count.

A suite of 200,000 cases with half of them failing made pytest print 100,000 failure
blocks and as many "short test summary info" lines, and it did so in quadratic time:
for each failure it shows, pytest's terminal looks for that test's teardown report by
scanning every report of the run (``TerminalReporter._get_teardown_reports``), so 1,000
failures of 2,000 cases cost 17 s of a 38 s run, and 100,000 of 200,000 ran past 15
minutes. Nobody reads that section past its first screens; every case's result is in
the run's files (the run folder's ``results.jsonl``, the ``--evals-json`` summary, JUnit
XML, the HTML report).

So, around pytest's own terminal summary, the reporter's lists of failed and erroring
reports keep every report of ordinary tests and those of the first N case items of each
(``--evals-max-failures-shown N``, ini ``evals_terminal_failures``, default 50; ``all``
shows everything), and its list of passing setup/teardown reports keeps only those of
tests still shown, so pytest's own scans are short. The FAILURES and ERRORS sections and
the short test summary then show N cases each, and one line says how many more there are
and where they are. The lists are restored before pytest counts the outcomes, so the
final line ("100000 failed, 100000 passed") is unchanged, as is the exit status.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pytest_evals.collection.xdist_blocks import is_case_nodeid

PLUGIN_NAME = "pytest_evals_failure_summary"
DEFAULT_SHOWN = 50
#: The reporter's lists this shortens: pytest's keys for failed and erroring reports.
SUMMARISED = {"failed": "failed", "error": "erroring"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evals", "LLM evaluation suites (pytest_evals)")
    group.addoption(
        "--evals-max-failures-shown",
        dest="evals_max_failures_shown",
        metavar="N",
        default=None,
        help=f"show the first N failed and the first N erroring cases in pytest's FAILURES/ERRORS sections and "
        f"short summary, then a count (default {DEFAULT_SHOWN}, ini evals_terminal_failures; 'all': every one). "
        "Every case stays in the result files",
    )
    parser.addini(
        "evals_terminal_failures",
        f"failed (and erroring) cases shown in full in the terminal (default {DEFAULT_SHOWN}; 'all': every one)",
        default=str(DEFAULT_SHOWN),
    )


def shown_limit(config: pytest.Config) -> int | None:
    """How many failed cases the terminal shows in full; None: all of them."""
    option = config.getoption("evals_max_failures_shown", None)
    name, value = ("--evals-max-failures-shown", option) if option is not None else (
        "evals_terminal_failures", config.getini("evals_terminal_failures"))
    text = str(value).strip().lower()
    if text in ("all", "none", ""):
        return None
    try:
        limit = int(text)
    except ValueError:
        limit = -1
    if limit < 0:
        raise pytest.UsageError(f"{name}: expected a number of cases >= 0 or 'all', got {value!r}")
    return limit


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # workers print no summary
    limit = shown_limit(config)
    if limit is not None:
        summary = FailureSummary(config, limit)
        config.pluginmanager.register(summary, PLUGIN_NAME)
        config.pluginmanager.register(SectionNote(summary), f"{PLUGIN_NAME}_note")


def split_reports(reports: list[Any], limit: int, shown: set[str]) -> tuple[list[Any], set[str]]:
    """The reports to show (every non-case report; those of the first ``limit`` case
    node ids, adding them to ``shown``) and the node ids of the cases left out."""
    kept: list[Any] = []
    hidden: set[str] = set()
    taken: set[str] = set()
    for report in reports:
        nodeid = getattr(report, "nodeid", "")
        if not is_case_nodeid(nodeid) or nodeid in taken:
            kept.append(report)
        elif len(taken) < limit:
            taken.add(nodeid)
            kept.append(report)
        else:
            hidden.add(nodeid)
    shown |= taken
    return kept, hidden - taken


def where_cases_are(config: pytest.Config) -> str:
    """The files that hold every case's result, as the note names them."""
    places: list[str] = []
    if config.getoption("evals_report_dir", None) or config.getini("evals_report_dir"):
        from pytest_evals.output.artifacts import run_dir

        folder = run_dir(config)
        if folder is not None:
            places.append(str(folder / "results.jsonl"))
    for option in ("evals_json", "xmlpath", "htmlpath"):
        value = config.getoption(option, None)
        if value:
            places.append(str(value))
    if not places:
        return "run with --evals-report-dir DIR or --evals-json PATH to keep every case's result"
    return "every case is in " + ", ".join(places)


class FailureSummary:
    def __init__(self, config: pytest.Config, limit: int) -> None:
        self.config = config
        self.limit = limit
        #: Cases left out of the terminal, by pytest's key ("failed", "error").
        self.hidden: dict[str, int] = {}

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> Generator[None, None, None]:
        stats: dict[str, list[Any]] = terminalreporter.stats
        saved: dict[str, list[Any]] = {}
        shown: set[str] = set()
        self.hidden = {}
        for key in SUMMARISED:
            reports = stats.get(key)
            if not reports:
                continue
            kept, hidden = split_reports(reports, self.limit, shown)
            if hidden:
                saved[key], stats[key] = reports, kept
                self.hidden[key] = len(hidden)
        if saved and "" in stats and self.config.option.tbstyle != "no":
            # pytest scans these once per failure it shows (for teardown output): only
            # those of tests still shown remain. With --tb=no it shows no section and
            # scans nothing (the filter was 0.39 s of a 35,000-case run's end).
            passing = stats[""]
            saved[""] = passing
            stats[""] = [r for r in passing if not is_case_nodeid(getattr(r, "nodeid", "")) or r.nodeid in shown]
        try:
            return (yield)
        finally:
            stats.update(saved)
            if self.hidden:
                terminalreporter.write_line(self.note(), yellow=True)

    def note(self) -> str:
        counts = [f"{n:,} more {SUMMARISED[key]} case(s)" for key, n in self.hidden.items()]
        return (
            f"{' and '.join(counts)} not shown (the terminal shows the first {self.limit:,}; "
            f"--evals-max-failures-shown all shows every one): {where_cases_are(self.config)}"
        )


class SectionNote:
    """The same note right under pytest's FAILURES and ERRORS sections (pytest prints them
    before any plugin's summary; this is the first plugin's summary)."""

    def __init__(self, summary: FailureSummary) -> None:
        self.summary = summary

    @pytest.hookimpl(tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.summary.hidden and self.summary.config.option.tbstyle != "no":
            terminalreporter.write_line(self.summary.note(), yellow=True)
