"""The report files other plugins write beside ours: pytest-html's ``--html`` and
pytest's own ``--junitxml``, guarded like our artifacts.

- Before the run: a path naming a folder, or whose folder cannot be created (a file on
  the way, a read-only or missing mount, a name too long), is a usage error naming the
  option. pytest-html creates the folder while it configures and failed there with an
  INTERNALERROR (exit 3); pytest's JUnit writer failed only at the end, after the run.
- At the end: a write that fails anyway (a full disk, a pytest-html hook that raises) is one artifact problem and exit
  status 1, as for our own artifacts, instead of a traceback that also took the terminal
  summary with it (both write in ``pytest_sessionfinish``, inside the terminal's wrapper).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from pytest_evals.controller.artifact_writers import fail_exit_status, record_problem
from pytest_evals.output.artifacts import rewrite_summary

#: option dest -> (its flag, the artifact's name, the module prefix of its writer)
REPORT_FILE_OPTIONS = {
    "htmlpath": ("--html", "HTML report", "pytest_html"),
    "xmlpath": ("--junitxml", "JUnit XML", "_pytest.junitxml"),
}


def report_path(value: str) -> Path:
    """The path as its writer reads it (pytest-html expands variables and ``~``)."""
    return Path(os.path.expandvars(value)).expanduser()


def check_report_file(flag: str, value: str) -> None:
    """A usage error unless the file can be written where ``value`` says (its folder is
    created now, as pytest-html does itself)."""
    try:
        path = report_path(value)
        if path.is_dir():
            raise pytest.UsageError(f"{flag} {value}: is a folder, not a file")
        path.absolute().parent.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError, RuntimeError) as exc:
        if isinstance(exc, (FileExistsError, NotADirectoryError)):
            reason = f"a file on the way is not a folder ({exc.filename})"
        else:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise pytest.UsageError(f"{flag} {value[:200]}: its folder cannot be created: {reason}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # only the controller writes these files
    for dest, (flag, _, _) in REPORT_FILE_OPTIONS.items():
        value = config.getoption(dest, None)
        if value:
            check_report_file(flag, str(value))


def _writer_of(tb: TracebackType | None) -> str | None:
    """The option whose writer raised, from the modules on the traceback."""
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        for dest, (_, _, prefix) in REPORT_FILE_OPTIONS.items():
            if module == prefix or module.startswith(prefix + "."):
                return dest
        tb = tb.tb_next
    return None


# trylast: the innermost wrapper, so the terminal's (which prints the summary after the
# others) sees a finished session.
@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> Generator[None, Any, Any]:
    try:
        return (yield)
    except Exception as exc:
        # Only what failed inside those writers (a full disk, a pytest-html hook of some
        # plugin that raised); anything else is not ours to catch.
        dest = None if hasattr(session.config, "workerinput") else _writer_of(exc.__traceback__)
        if dest is None:
            raise
        _, artifact, _ = REPORT_FILE_OPTIONS[dest]
        record_problem(session.config, artifact, session.config.getoption(dest, None), exc)
        fail_exit_status(session)
        rewrite_summary(session.config)  # written before; it must say what the exit status says
        return None
