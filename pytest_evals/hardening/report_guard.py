"""pytest wiring of the hardening layer: what leaves a process is scrubbed, limits are set.

- Every test and collection report is scrubbed before any reporter sees it (terminal,
  JUnit, HTML, the result files, xdist's transfer to the controller): secrets masked,
  lone surrogates escaped. The wrapper runs outermost, after every other plugin has
  put its data on the report.
- Log records are masked at creation (see :func:`pytest_evals.hardening.redaction.install_log_redaction`).
- The input limits of :mod:`pytest_evals.suites.jsonl_cases` come from ini keys.
- Run-level problems that used to hide in one case's captured log (an unusable response
  cache) are shown once in the terminal summary; xdist workers send theirs through
  ``workeroutput``.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from typing import Any

import pytest

from pytest_evals.hardening import input_limits as limits
from pytest_evals.hardening import redaction as redact
from pytest_evals.model.case_result import REPORT_ATTR

WORKEROUTPUT_KEY = "pytest_evals_problems"
_problems_key = pytest.StashKey[list[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "evals_max_line_bytes",
        f"longest JSONL case line read, in bytes (default {limits.DEFAULT_MAX_LINE_BYTES})",
        default="",
    )
    parser.addini(
        "evals_max_json_depth",
        f"deepest nesting of a JSONL case or JSON input file (default {limits.DEFAULT_MAX_DEPTH})",
        default="",
    )
    parser.addini(
        "evals_max_json_file_bytes",
        f"largest whole-file JSON input read (a family's input document), in bytes (default {limits.DEFAULT_MAX_FILE_BYTES})",
        default="",
    )


def _positive_int(config: pytest.Config, name: str, default: int) -> int:
    text = str(config.getini(name) or "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise pytest.UsageError(f"ini {name}: expected a positive integer, got {text!r}") from None
    if value < 1:
        raise pytest.UsageError(f"ini {name}: expected a positive integer, got {value}")
    return value


def pytest_configure(config: pytest.Config) -> None:
    redact.install_log_redaction()
    limits.set_limits(
        max_line_bytes=_positive_int(config, "evals_max_line_bytes", limits.DEFAULT_MAX_LINE_BYTES),
        max_depth=_positive_int(config, "evals_max_json_depth", limits.DEFAULT_MAX_DEPTH),
        max_file_bytes=_positive_int(config, "evals_max_json_file_bytes", limits.DEFAULT_MAX_FILE_BYTES),
    )
    config.stash[_problems_key] = []


def _scrub_report(report: pytest.TestReport | pytest.CollectReport) -> None:
    longrepr = report.longrepr
    if longrepr is not None and not isinstance(longrepr, tuple):
        # A suite case's failure text was scrubbed when it was built (suite_items.py):
        # rendering it again only to search it was a tenth of a cached run.
        if not getattr(longrepr, "evals_scrubbed", False):
            text = longrepr if isinstance(longrepr, str) else str(report.longreprtext)
            if redact.needs_scrub(text):
                # The structured repr cannot be edited in place; its text can.
                report.longrepr = redact.scrub(text)
    elif isinstance(longrepr, tuple) and len(longrepr) == 3:
        # Skips: (path, line, message).
        report.longrepr = (longrepr[0], longrepr[1], redact.scrub(str(longrepr[2])))
    # Everything else is searched in one pass per report and rebuilt only when dirty.
    if report.sections and redact.dirty(report.sections):
        report.sections = [(redact.scrub(title), redact.scrub(body)) for title, body in report.sections]
    if isinstance(report, pytest.TestReport):
        props = report.user_properties
        if props and (redact.dirty(props) or not all(type(name) is str for name, _ in props)):
            report.user_properties = [
                (redact.scrub(str(name)), redact.scrub_obj(value)) for name, value in props
            ]
        data = getattr(report, REPORT_ATTR, None)
        if data is not None:
            setattr(report, REPORT_ATTR, redact.scrub_obj(data))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    _scrub_report(report)
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    report = yield
    _scrub_report(report)
    return report


def problems(config: pytest.Config) -> list[str]:
    """Run-level problems of this process and (on the controller) of every worker."""
    stored = config.stash.get(_problems_key, None)
    seen = list(stored or [])
    # Only a run that used the response cache can have its problems (and has loaded it).
    llm_cache = sys.modules.get("pytest_evals.llm.cache")
    for note in llm_cache.problems() if llm_cache is not None else ():
        if note not in seen:
            seen.append(note)
    return seen


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[WORKEROUTPUT_KEY] = [redact.scrub(p) for p in problems(session.config)]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    received = getattr(node, "workeroutput", {}).get(WORKEROUTPUT_KEY) or []
    mine = node.config.stash.setdefault(_problems_key, [])
    for note in received:
        if note not in mine:
            mine.append(str(note))


# trylast: a section of its own, after pytest_evals' summary and the lines features add.
@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    notes = problems(config)
    if not notes:
        return
    terminalreporter.section("pytest_evals warnings", yellow=True, bold=True)
    for note in notes:
        terminalreporter.write_line(redact.scrub(f"WARNING: {note}"), yellow=True)
