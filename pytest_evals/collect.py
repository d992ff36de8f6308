"""Collection: suite files become pytest files, their cases become items.

A suite whose configuration is broken becomes one erroring item rather than a
collection error, so the other suites still run (pytest stops the whole session on
collection errors).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# Private to pytest but stable since pytest 5; what repr_failure returns.
from _pytest._code.code import (
    ExceptionChainRepr,
    ReprEntry,
    ReprFileLocation,
    ReprTraceback,
    TerminalRepr,
)

from pytest_evals.errors import EvalsError
from pytest_evals.results import CaseResult
from pytest_evals.suite import Suite, load_suite

if TYPE_CHECKING:
    from _pytest._code.code import TracebackStyle

    from pytest_evals.tasks.base import CaseRef, Task

HARPIA_SUFFIX = ".harpia.json"


def implicit_raw(path: Path) -> dict[str, Any] | None:
    """Files that are a suite by their name alone (HarpIA input files)."""
    if path.name.endswith(HARPIA_SUFFIX):
        return {"task": "harpia", "input_path": path.name, "name": path.name[: -len(HARPIA_SUFFIX)]}
    return None


def open_suite(
    config: pytest.Config, path: Path, nodeid: str, used: set[int] | None = None
) -> tuple[Suite, Task[Any]]:
    from pytest_evals.session import get_state
    from pytest_evals.tasks import get_task_class

    state = get_state(config)
    suite = load_suite(path, nodeid, state.overrides, implicit_raw(path), used, rootdir=config.rootpath)
    task = get_task_class(suite.config.task)(suite)
    return suite, task


class CaseFailure(pytest.fail.Exception):  # type: ignore[name-defined]
    """The case was evaluated and missed its expectation (a FAIL).

    An outcome without a Python traceback: the message says everything, and skipping
    pytest's source-parsing traceback formatting keeps 3,500 failures cheap.
    """

    # Shown as "CaseFailure: ..." in pytest's short summary, like pytest's own "Failed".
    __module__ = "builtins"

    def __init__(self, message: str) -> None:
        super().__init__(message, pytrace=False)


class CaseError(CaseFailure):
    """The case could not be evaluated (raised in setup, so pytest reports an ERROR)."""


class SuiteFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        try:
            _suite, task = open_suite(self.config, self.path, self.nodeid)
            for index, ref in enumerate(task.case_refs()):
                yield CaseItem.from_parent(self, name=ref.case_id, ref=ref, task=task, index=index)
        except EvalsError as exc:
            yield SuiteErrorItem.from_parent(self, name="suite-error", message=str(exc))


class SuiteErrorItem(pytest.Item):
    """Stands for a suite (or input file) that could not be read at all."""

    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def setup(self) -> None:
        raise CaseError(f"suite could not be loaded:\n{self.message}")

    def runtest(self) -> None:  # pragma: no cover - setup always raises
        pass

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, "suite configuration"


class CaseItem(pytest.Item):
    def __init__(self, *, ref: CaseRef, task: Task[Any], index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ref = ref
        self.task = task
        self.index = index
        self.evals_result: CaseResult | None = None

    def setup(self) -> None:
        from pytest_evals.session import get_state

        result = get_state(self.config).result_for(self)
        self.evals_result = result
        self.user_properties.append(("evals.status", result.status))
        for name, value in result.scores.items():
            self.user_properties.append((f"evals.score.{name}", value))
        if result.status == "skipped":
            pytest.skip(result.message or "skipped")
        if result.status == "error":
            raise CaseError(format_failure(self, result))

    def runtest(self) -> None:
        result = self.evals_result
        assert result is not None
        if result.status == "failed":
            raise CaseFailure(format_failure(self, result))

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, CaseFailure):
            return failure_repr(self.ref, excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # The case's line is in its data file, not in the suite file: name it in the
        # description rather than pair it with the suite's path.
        return self.path, None, f"{self.task.suite.name}::{self.ref.case_id} ({self.ref.source})"


def failure_repr(ref: CaseRef, exc: CaseFailure) -> TerminalRepr:
    """What pytest would build for a traceback-less failure, built directly.

    pytest walks and filters the whole traceback even when it prints only the message;
    with thousands of failing cases that was a tenth of the run. The crash location
    is the case's own file and line, so ``--tb=line`` points at the data.
    """
    message = str(exc)
    path, line = ref.source, ref.line
    if line and path.endswith(f":{line}"):
        path = path[: -len(f":{line}")]
    entry = ReprEntry(message.split("\n"), None, None, None, "value")
    crash = ReprFileLocation(path, line, f"{type(exc).__name__}: {message}")
    return ExceptionChainRepr([(ReprTraceback([entry], None, "value"), crash, None)])


def format_failure(item: CaseItem, result: CaseResult) -> str:
    """The text a reviewer sees for a failed or erroring case (message first: the short
    summary shows only the first line)."""
    if result.status == "error":
        lines = [f"[{result.error_kind} error] {result.message}"]
        raw = result.details.get("raw_reply")
        if raw:
            lines.append(f"raw reply: {str(raw)[:2000]}")
        tb = result.details.get("traceback")
        if tb:
            lines.append(tb.rstrip())
    else:
        lines = [result.message or "case failed"]
    lines.append(f"case {item.ref.case_id} at {item.ref.source}")
    return "\n".join(lines)
