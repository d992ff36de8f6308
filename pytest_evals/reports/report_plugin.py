"""Reports sub-plugin: the pytest-html integration and the per-run result files.

Options (group "evals"): ``--evals-html-detail {auto,full,failures}`` and the ini keys
``evals_html_*``; the result folder itself is the core's ``--evals-report-dir``.
Everything heavy (matplotlib, the writers) is imported only when a report is asked for.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_evals.controller.artifact_writers import names_artifact
from pytest_evals.reports.report_state import REPORT_STATE_KEY, ReportState

_HTML_KEY = pytest.StashKey[Any]()
# pytest-html's (and pytest's JUnit) file, checked before the run (a failed write an
# artifact problem), is output/report_paths.py, registered right after this module by
# plugin.CORE_PLUGINS.


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evals")
    group.addoption(
        "--evals-html-detail",
        choices=("auto", "full", "failures"),
        default=None,
        help="cases in the --html report: 'full' = a row with full detail for every case; "
        "'failures' = rows for failures and errors (full detail), passes summarised in the "
        "report's case list; 'auto' (default) = 'full' up to evals_html_max_rows cases, else 'failures'",
    )
    parser.addini("evals_html_detail", "default for --evals-html-detail (auto, full, failures)", default="auto")
    parser.addini("evals_html_max_mb", "size budget of the HTML report in MB; beyond it case details are summarised (default 25)", default="25")
    parser.addini("evals_html_max_rows", "most case rows in pytest-html's table (it renders every row at load; default 2000)", default="2000")
    parser.addini("evals_html_field_chars", "characters of each text field kept in a case's HTML detail (default 20000)", default="20000")
    parser.addini("evals_html_log_chars", "characters of captured output kept per case row (default 5000)", default="5000")


def _is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    if not _is_controller(config):
        return
    state = ReportState(config)
    config.stash[REPORT_STATE_KEY] = state
    if config.getoption("htmlpath", None) and config.pluginmanager.hasplugin("html"):
        from pytest_evals.reports.html_report import HtmlReport

        html = HtmlReport(config, state)
        config.stash[_HTML_KEY] = html
        config.pluginmanager.register(html, "pytest_evals_html_report")


def pytest_collection_finish(session: pytest.Session) -> None:
    html = session.config.stash.get(_HTML_KEY, None)
    if html is not None:
        html.set_expected(len(session.items))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    html = node.config.stash.get(_HTML_KEY, None)
    if html is not None:
        html.set_expected(len(ids))


@pytest.hookimpl(optionalhook=True)
def pytest_evals_summary(config: pytest.Config, summary: dict[str, Any]) -> None:
    """Point the JSON summary at this run's result files and HTML report."""
    state = config.stash.get(REPORT_STATE_KEY, None)
    if state is None:
        return
    folder = state.report_dir
    if folder is not None:
        summary["report_dir"] = str(folder)
        summary["results_path"] = str(folder / "results.jsonl")
    html = config.getoption("htmlpath", None)
    if html:
        summary["html_report"] = str(html)


@pytest.hookimpl(optionalhook=True)
@names_artifact("run folder")
def pytest_evals_write_outputs(config: pytest.Config) -> None:
    """The run folder, once the exit status is decided (before pytest-html writes)."""
    state = config.stash.get(REPORT_STATE_KEY, None)
    if state is None or state.run_summary() is None:
        return
    folder = state.report_dir
    if folder is not None:
        from pytest_evals.reports.result_files import write_run_files

        state.written = write_run_files(config, folder, state.plots())


@pytest.hookimpl(optionalhook=True)
def pytest_evals_terminal_summary(config: pytest.Config, terminalreporter: pytest.TerminalReporter) -> None:
    state = config.stash.get(REPORT_STATE_KEY, None)
    if state is None or not state.written:
        return
    terminalreporter.write_line(f"evals result files: {state.written['folder']}")


def pytest_unconfigure(config: pytest.Config) -> None:
    html = config.stash.get(_HTML_KEY, None)
    if html is not None and config.pluginmanager.is_registered(html):
        config.pluginmanager.unregister(html)
