"""HarpIA output and log files: ``--harpia-output PATH`` and ``--harpia-log PATH``.

Written on the controller once the run's verdict is decided (the
``pytest_evals_write_outputs`` hook), so xdist runs write one file, not one per worker;
the core writes the JSON summary after this, with the ``harpia`` section in it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

_WRITTEN = pytest.StashKey[list[tuple[str, Path]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evals")
    group.addoption(
        "--harpia-output",
        metavar="PATH",
        help="write the HarpIA output JSON (one object per enabled metric: score, elapsed time) "
        "of the run's HarpIA suites to PATH ('{suite}' in PATH: one file per suite)",
    )
    group.addoption(
        "--harpia-log",
        metavar="PATH",
        help="write the HarpIA log (JSON Lines, one line per metric and instance) to PATH",
    )


def _resolve(config: pytest.Config, text: str) -> str:
    path = Path(text).expanduser()
    return str(path if path.is_absolute() else Path(config.invocation_params.dir) / path)


# tryfirst: the result folder's copy of the summary names these files too.
@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_evals_write_outputs(config: pytest.Config, summary: dict[str, Any]) -> None:
    output = config.getoption("harpia_output", None)
    log = config.getoption("harpia_log", None)
    if not output and not log:
        return
    from pytest_evals.aggregator import get_aggregator
    from pytest_evals.harpia.writers import harpia_suites, write_log, write_output

    suites = harpia_suites(summary)
    written: list[tuple[str, Path]] = []
    if output:
        written += [("output", p) for p in write_output(_resolve(config, output), suites)]
    if log:
        agg = get_aggregator(config)
        results = agg.results_by_suite() if agg is not None else {}
        written += [("log", p) for p in write_log(_resolve(config, log), suites, results)]
    config.stash[_WRITTEN] = written
    summary["harpia"] = {kind: [str(p) for k, p in written if k == kind] for kind in ("output", "log")}


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for kind, path in config.stash.get(_WRITTEN, []):
        terminalreporter.write_line(f"HarpIA {kind}: {path}")
