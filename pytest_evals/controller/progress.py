"""Progress of long evaluation runs: items done/total, rate, ETA, running metric per group.

Runs on the process that reports (the controller under xdist, where
``pytest_runtest_logreport`` sees the workers' replayed reports). It prints whole
lines through the terminal reporter at an interval: short on a terminal, longer in CI
logs, and never control characters when the output is not a terminal. The running
metric is the pass rate of each group of finished cases, read from the result each
report carries; a group is the suite, unless a task family names another for the case
(``progress_group`` in its registration, see :mod:`pytest_evals.registry.family_registry`; a family
may show running accuracy per task type, say).

On by default only for runs with at least ``evals_progress_min_items`` evaluation
items; ``--evals-progress`` forces it, ``--no-evals-progress`` turns it off.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_evals.collection.xdist_blocks import is_case_nodeid
from pytest_evals.model.case_result import REPORT_ATTR

PLUGIN_NAME = "pytest_evals_progress"
DEFAULT_MIN_ITEMS = 500
DEFAULT_INTERVAL_TTY = 2.0
DEFAULT_INTERVAL_PLAIN = 30.0


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evals", "LLM evaluation suites (pytest_evals)")
    group.addoption(
        "--evals-progress",
        dest="evals_progress",
        action="store_true",
        default=None,
        help="show progress lines (items done, rate, ETA, running pass rate/accuracy per task)",
    )
    group.addoption("--no-evals-progress", dest="evals_progress", action="store_false", help="no progress lines")
    parser.addini(
        "evals_progress_min_items",
        f"evaluation items from which progress is shown by default (default {DEFAULT_MIN_ITEMS})",
        default=str(DEFAULT_MIN_ITEMS),
    )
    parser.addini(
        "evals_progress_interval",
        "seconds between progress lines (default 2 on a terminal, 30 otherwise)",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or config.getoption("evals_progress", None) is False:
        return
    config.pluginmanager.register(Progress(config), PLUGIN_NAME)


def _family_group(result: dict[str, Any]) -> tuple[str, str] | None:
    # Bound on first use: an import statement per report cost twice the lookup itself.
    global _progress_group
    if _progress_group is None:
        from pytest_evals.registry.family_registry import progress_group

        _progress_group = progress_group
    return _progress_group(result)


_progress_group: Callable[[dict[str, Any]], tuple[str, str] | None] | None = None


def format_duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}"


@dataclass
class Tally:
    passed: int = 0
    failed: int = 0
    errors: int = 0

    @property
    def rate(self) -> float | None:
        judged = self.passed + self.failed
        return self.passed / judged if judged else None


@dataclass
class ProgressState:
    """Counts and timing; pure so it can be tested without pytest."""

    total: int = 0
    done: int = 0
    started: float = 0.0
    groups: dict[str, Tally] = field(default_factory=dict)
    #: The label of each group's running metric when it is not "pass" (e.g. "acc").
    labels: dict[str, str] = field(default_factory=dict)
    #: Names a case's group (default: the families' hook, see :mod:`pytest_evals.registry.family_registry`).
    grouper: Callable[[dict[str, Any]], tuple[str, str] | None] = field(default=lambda r: _family_group(r))

    def record(self, result: dict[str, Any]) -> None:
        named = self.grouper(result)
        if named is not None:
            group, label = named
            if label != "pass":
                self.labels[group] = label
        else:
            suite = str(result.get("suite", ""))
            group = suite.replace("\\", "/").rsplit("/", 1)[-1].split(".", 1)[0] or "cases"
        tally = self.groups.setdefault(group, Tally())
        status = result.get("status")
        if status == "passed":
            tally.passed += 1
        elif status == "failed":
            tally.failed += 1
        elif status == "error":
            tally.errors += 1

    def line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        parts = [f"[evals] {self.done:,}/{self.total:,} items"]
        if self.total:
            parts[0] += f" ({100 * self.done / self.total:.1f}%)"
        parts.append(f"{rate:,.1f} items/s")
        if self.total and self.done < self.total:
            parts.append(f"ETA {format_duration((self.total - self.done) / rate)}" if rate > 0 else "ETA unknown")
        else:
            parts.append(f"elapsed {format_duration(elapsed)}")
        metrics = []
        for name, tally in self.groups.items():
            value = tally.rate
            label = self.labels.get(name, "pass")
            shown = "n/a" if value is None else f"{value:.3f}"
            text = f"{name} {label} {shown} (n={tally.passed + tally.failed:,}"
            text += f", {tally.errors} err)" if tally.errors else ")"
            metrics.append(text)
        if metrics:
            parts.append("; ".join(metrics))
        return " | ".join(parts)


class Progress:
    def __init__(self, config: pytest.Config, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.clock = clock
        self.state = ProgressState()
        self.forced = bool(config.getoption("evals_progress", None))
        self.min_items = int(config.getini("evals_progress_min_items") or DEFAULT_MIN_ITEMS)
        self.active = False
        self.interval = 0.0
        self.last_print = 0.0
        self.every_items = 0
        self.last_items = 0
        #: Under xdist the controller prints result letters without a file prefix, so
        #: the reporter does not know the line is dirty: start a new line ourselves.
        self.xdist = False

    # -- the total ------------------------------------------------------------------------
    def _start(self, nodeids: Sequence[str]) -> None:
        total = sum(1 for n in nodeids if is_case_nodeid(n))
        self.state.total = total
        self.active = total > 0 and (self.forced or total >= self.min_items)
        if not self.active:
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        tty = bool(reporter is not None and reporter.isatty())
        ini = self.config.getini("evals_progress_interval")
        self.interval = float(ini) if ini else (DEFAULT_INTERVAL_TTY if tty else DEFAULT_INTERVAL_PLAIN)
        # Also report every 10% so short runs still show their course in CI logs.
        self.every_items = max(1, total // 10)
        self.state.started = self.last_print = self.clock()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # Not called on an xdist controller (it does not collect); the hook below is.
        if self.state.started == 0.0:
            self._start([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        # Every worker collects the same items; the first one sets the total.
        if self.state.started == 0.0:
            self.xdist = True
            self._start(ids)

    # -- finished items ---------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Called three times per item (35,000 items: 105,000 calls): cheap tests first.
        if not self.active or report.outcome == "rerun":
            # A pytest-rerunfailures attempt: the final attempt's result counts.
            return
        data = getattr(report, REPORT_ATTR, None)
        if isinstance(data, dict):
            self.state.record(data)
        if report.when != "teardown" or not is_case_nodeid(report.nodeid):
            return
        self.state.done += 1
        self._maybe_print()

    def _maybe_print(self) -> None:
        now = self.clock()
        due = now - self.last_print >= self.interval
        milestone = self.state.done - self.last_items >= self.every_items
        if due or milestone or self.state.done == self.state.total:
            self.emit(self.state.line(now))
            self.last_print, self.last_items = now, self.state.done

    def emit(self, text: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        if self.xdist and self.config.get_verbosity() <= 0:
            reporter.write("\n")
        # Bold only where the terminal writer does markup (a terminal, or --color=yes):
        # CI logs get plain lines without control characters.
        reporter.write_line(text, bold=True)
