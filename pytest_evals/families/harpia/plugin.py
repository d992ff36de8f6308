"""HarpIA output and log files: ``--evals-harpia-output PATH`` and ``--evals-harpia-log PATH``.

Written on the controller once the run's verdict is decided (the
``pytest_evals_write_outputs`` hook), so xdist runs write one file, not one per worker;
the core writes the JSON summary after this, with the ``harpia`` section in it. The
spellings before the ``evals`` prefix (``--harpia-output``, ``--harpia-log``, ini
``harpia_case_deadline``) are deprecated aliases (:mod:`pytest_evals.families.harpia.option_aliases`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.controller.artifact_writers import names_artifact
from pytest_evals.families.harpia.option_aliases import (
    RenamedIni,
    RenamedOption,
    add_ini_alias,
    add_option_alias,
    apply_aliases,
)

if TYPE_CHECKING:
    from pytest_evals.controller.run_report import RunReport
    from pytest_evals.families.harpia.writers import LiveLog

_WRITTEN = pytest.StashKey[list[tuple[str, Path]]]()
_LIVE = pytest.StashKey["LiveLog"]()
_NOTES = pytest.StashKey[list[str]]()

OUTPUT = RenamedOption("--harpia-output", "--evals-harpia-output", "evals_harpia_output")
LOG = RenamedOption("--harpia-log", "--evals-harpia-log", "evals_harpia_log")
CASE_DEADLINE = RenamedIni("harpia_case_deadline", "evals_harpia_case_deadline")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evals")
    group.addoption(
        OUTPUT.new,
        dest=OUTPUT.dest,
        metavar="PATH",
        help="write the HarpIA output JSON (one object per enabled metric: score, elapsed time) "
        "of the run's HarpIA suites to PATH ('{suite}' in PATH: one file per suite)",
    )
    group.addoption(
        LOG.new,
        dest=LOG.dest,
        metavar="PATH",
        help="write the HarpIA log (JSON Lines, one line per metric and instance) to PATH; "
        "lines are appended as instances finish, and the file is rewritten in instance order at the end",
    )
    add_option_alias(group, OUTPUT, "PATH")
    add_option_alias(group, LOG, "PATH")
    parser.addini(
        CASE_DEADLINE.new,
        "seconds one HarpIA instance's Python-computed metrics (ROUGE, BLEU, METEOR, ...) may take "
        "before the instance is an ERROR (default 60; 0: no limit; a suite's case_deadline wins)",
        default="",
    )
    add_ini_alias(parser, CASE_DEADLINE)


def _resolve(config: pytest.Config, text: str) -> str:
    path = Path(text).expanduser()
    return str(path if path.is_absolute() else Path(config.invocation_params.dir) / path)


class _LiveLogPlugin:
    """Controller-side: appends each HarpIA instance's log lines as its result arrives."""

    def __init__(self, live: LiveLog) -> None:
        self.live = live

    def pytest_evals_case_result(self, nodeid: str, result: Any) -> None:
        self.live.add(result)

    def pytest_unconfigure(self) -> None:
        self.live.close()


def pytest_configure(config: pytest.Config) -> None:
    apply_aliases(config, (OUTPUT, LOG), (CASE_DEADLINE,))
    log = config.getoption(LOG.dest, None)
    if not log or hasattr(config, "workerinput"):
        return
    from pytest_evals.families.harpia.writers import LiveLog

    live = LiveLog(_resolve(config, log))
    config.stash[_LIVE] = live
    config.pluginmanager.register(_LiveLogPlugin(live), "pytest-evals-harpia-live-log")


# tryfirst: the result folder's copy of the summary names these files too.
@pytest.hookimpl(optionalhook=True, tryfirst=True)
@names_artifact("HarpIA output and log")
def pytest_evals_write_outputs(config: pytest.Config, summary: dict[str, Any], report: RunReport) -> None:
    output = config.getoption(OUTPUT.dest, None)
    log = config.getoption(LOG.dest, None)
    live = config.stash.get(_LIVE, None)
    if live is not None:
        live.close()  # the complete log replaces what was appended
    if not any("harpia" in (s.get("tables") or {}) for s in summary.get("suites", [])):
        return  # no HarpIA suite in this run: the writers (and metrics) are not imported
    from pytest_evals.families.harpia.writers import (
        SuiteFileNames,
        harpia_suites,
        write_log,
        write_output,
    )

    suites = harpia_suites(summary)
    # Caveats and warnings of the metrics (BERTScore's model, truncated texts) on the terminal.
    notes = []
    for suite in suites:
        for obj in suite["tables"]["harpia"]["metrics"]:
            for text in [*obj.get("notes", []), *obj.get("warnings", [])]:
                line = f"{suite['name']}: {obj['name']}: {text}"
                if line not in notes:
                    notes.append(line)
    config.stash[_NOTES] = notes
    if not output and not log:
        return
    # One naming for the live log and both final files: a suite's output and log share
    # its name, and same-named suites stay apart (t, t-2).
    names = live.names if live is not None else SuiteFileNames()
    written: list[tuple[str, Path]] = []
    if output:
        written += [("output", p) for p in write_output(_resolve(config, output), suites, names)]
    if log:
        written += [("log", p) for p in write_log(_resolve(config, log), suites, report.results_by_suite(), names)]
    config.stash[_WRITTEN] = written
    summary["harpia"] = {kind: [str(p) for k, p in written if k == kind] for kind in ("output", "log")}


@pytest.hookimpl(optionalhook=True)
def pytest_evals_terminal_summary(config: pytest.Config, terminalreporter: pytest.TerminalReporter) -> None:
    for kind, path in config.stash.get(_WRITTEN, []):
        terminalreporter.write_line(f"HarpIA {kind}: {path}")
    for line in config.stash.get(_NOTES, []):
        terminalreporter.write_line(f"HarpIA: {line}")
