"""Every artifact is written whatever another one does.

The run's artifacts (generated outputs, the run folder, HarpIA files, the red-team store,
the Markdown summary, the JSON summary, JUnit properties) are written by the
implementations of ``pytest_evals_write_outputs``. One hook call stops at the first
exception: a full disk under the run folder used to cost the JSON summary and JUnit too,
and end in a traceback without a terminal summary.

:func:`call_writers` calls each implementation on its own, in the hook's order; inside
one, :func:`writing` isolates each file (or group of files) further. A failure is an
:class:`ArtifactProblem`: one line in the terminal summary naming the artifact, its path
and the reason; an ``artifact_problems`` list in the JSON summary (written last, so it
names the others); and exit status 1 when the run would otherwise have passed, since
the exit status is 0 only when every suite passed and every artifact was written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from pytest_evals.controller.run_report import get_run_report
from pytest_evals.hardening.redaction import scrub

if TYPE_CHECKING:
    from pytest_evals.controller.run_report import RunReport

#: The attribute :func:`names_artifact` sets on a writer, read by :func:`call_writers`.
ARTIFACT_ATTR = "evals_artifact"
_PROBLEMS = pytest.StashKey[list["ArtifactProblem"]]()
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ArtifactProblem:
    #: What was not written ("JSON summary", "run folder", ...).
    artifact: str
    #: The file or folder it was written to, when known.
    path: str | None
    reason: str

    def line(self) -> str:
        where = f" {shorten(self.path)}" if self.path else ""
        return scrub(f"{self.artifact} not written{where}: {shorten(self.reason)}")

    def to_json(self) -> dict[str, Any]:
        return {"artifact": self.artifact, "path": self.path, "reason": scrub(self.reason)}


#: Characters of a path or reason shown on the terminal (a hostile name has thousands;
#: the JSON summary keeps it whole).
SHOWN_CHARS = 300


def shorten(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[: SHOWN_CHARS // 2]}...{text[-SHOWN_CHARS // 4 :]} ({len(text)} characters)"


def names_artifact(name: str) -> Callable[[F], F]:
    """Decorate a ``pytest_evals_write_outputs`` implementation with what it writes, for
    the problem line when it fails as a whole."""

    def mark(function: F) -> F:
        setattr(function, ARTIFACT_ATTR, name)
        return function

    return mark


def artifact_problems(config: pytest.Config) -> list[ArtifactProblem]:
    """The artifacts of this run that could not be written, in the order they failed."""
    return config.stash.setdefault(_PROBLEMS, [])


def describe(exc: BaseException, path: str | Path | None = None) -> str:
    """Why a write failed, in a line: the system's reason and the file it names."""
    if isinstance(exc, FileExistsError) and exc.filename is not None:
        # what creating a folder where a file already is says
        return f"{exc.filename} is a file, not a folder"
    if isinstance(exc, OSError) and exc.strerror:
        reason = exc.strerror
        if exc.filename is not None and str(exc.filename) != str(path):
            reason += f" ({exc.filename})"
        return reason
    return f"{type(exc).__name__}: {exc}"


def record_problem(
    config: pytest.Config, artifact: str, path: str | Path | None, exc: BaseException
) -> ArtifactProblem:
    """Note an artifact that was not written (and correct the summary's exit status)."""
    if path is None and isinstance(exc, OSError) and exc.filename is not None:
        path = exc.filename
    problem = ArtifactProblem(artifact, str(path) if path is not None else None, describe(exc, path))
    artifact_problems(config).append(problem)
    report = get_run_report(config)
    if report is not None:
        sync_summary(report)
    return problem


def sync_summary(report: RunReport) -> None:
    """The problems so far in the summary, and exit status 1 instead of 0 for them."""
    problems = artifact_problems(report.config)
    if not problems:
        return
    report.summary["artifact_problems"] = [p.to_json() for p in problems]
    if report.summary.get("exit_status") == int(pytest.ExitCode.OK):
        report.summary["exit_status"] = int(pytest.ExitCode.TESTS_FAILED)


@contextlib.contextmanager
def writing(config: pytest.Config, artifact: str, path: str | Path | None = None) -> Iterator[None]:
    """Write ``artifact`` in the block; an exception there is recorded, not raised, so
    the writes after the block still happen."""
    try:
        yield
    except Exception as exc:
        record_problem(config, artifact, path, exc)


def _artifact_of(impl: Any) -> str:
    name = getattr(impl.function, ARTIFACT_ATTR, None)
    return str(name) if name else f"the outputs of plugin {impl.plugin_name}"


def call_writers(config: pytest.Config, report: RunReport) -> None:
    """``pytest_evals_write_outputs``, each implementation on its own."""
    hook = config.hook.pytest_evals_write_outputs
    kwargs = {"config": config, "summary": report.summary, "report": report}
    sync_summary(report)
    impls = hook.get_hookimpls()
    if any(impl.wrapper or impl.hookwrapper for impl in impls):
        # A wrapper around the writers wants the one hook call: isolated as a whole.
        with writing(config, "the run's outputs"):
            hook(**kwargs)
        return
    # pluggy calls the implementations last-registered first, tryfirst ones before.
    for impl in reversed(impls):
        with writing(config, _artifact_of(impl)):
            impl.function(*(kwargs[name] for name in impl.argnames))


def fail_exit_status(session: pytest.Session) -> None:
    """Exit status 1 for a run whose verdicts passed but whose artifacts were not all written."""
    if artifact_problems(session.config) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def write_problem_lines(config: pytest.Config, terminalreporter: pytest.TerminalReporter) -> None:
    """One line per artifact not written, in the terminal summary."""
    for problem in artifact_problems(config):
        terminalreporter.write_line(f"PROBLEM {problem.line()}", red=True, bold=True)
