"""SIGTERM ends a run the way Ctrl-C does: every artifact written, the run marked interrupted.

CI runners stop a job with SIGTERM (a cancelled pipeline, a job timeout; SIGKILL follows
after a grace period). Python's default for SIGTERM is to die at once: no JSON summary,
no JUnit XML, no result files, and the run's scratch files left behind. Here SIGTERM
raises :class:`Terminated`, a ``KeyboardInterrupt``, on the main thread, so pytest
takes the path it takes for Ctrl-C: the running item stops, the session finishes
(``pytest_sessionfinish``: the verdicts, every artifact, the terminal summary, pytest's
JUnit XML and the HTML report), cleanups run, and the exit status is pytest's
``INTERRUPTED`` (2), the status Ctrl-C gives.

- *Not a case's error*: :class:`Terminated` is defined in this package, so the guard that
  turns a target's ``KeyboardInterrupt`` into its case's ERROR
  (:mod:`pytest_evals.hardening.code_escapes`) lets it through.
- *Once the session is finishing, the outputs come first*: a SIGTERM that arrives while
  the session finishes (the artifacts being written) is noted and does not interrupt the
  writing; the process ends when they are written, as it was about to.
- *Workers*: under xdist the controller forwards SIGTERM to its workers, which stop the
  same way (their running targets' process groups are killed as their runs end), instead
  of waiting for xdist's shutdown to interrupt them after its own timeout. A SIGTERM sent to
  the whole process group reaches everyone; each stops as above.
- *Marked*: the JSON summary says ``"interrupted": "SIGTERM"`` (``"SIGINT"`` for Ctrl-C,
  null when the run was not interrupted by a signal).

Only the main thread may set signal handlers; a SIGTERM that is ignored (``SIG_IGN``) or
handled outside Python is left as it is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Generator
from types import FrameType
from typing import Any

import pytest

PLUGIN_NAME = "pytest_evals_termination"


class Terminated(KeyboardInterrupt):
    """Raised on the main thread when the process receives SIGTERM."""


class Termination:
    """Installs the SIGTERM handler for one pytest process (controller or worker)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.received = 0
        #: Set once the session is finishing: a SIGTERM then waits for the outputs.
        self.finishing = False
        #: How the run was interrupted, when a signal did it ("SIGTERM", "SIGINT").
        self.interrupted_by: str | None = None
        self._previous: Any = None
        self._installed = False
        #: xdist worker process ids (controller only), to pass a SIGTERM on to them.
        self._workers: set[int] = set()

    # -- the handler -----------------------------------------------------------------------
    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)
        if previous is signal.SIG_IGN or previous is None:
            return  # ignored on purpose, or handled by non-Python code: not ours to change
        self._previous = previous
        signal.signal(signal.SIGTERM, self._on_sigterm)
        self._installed = True

    def uninstall(self) -> None:
        if not self._installed:
            return
        self._installed = False
        with contextlib.suppress(ValueError, TypeError):
            if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
                signal.signal(signal.SIGTERM, self._previous)

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self.received += 1
        self._forward()
        if self.finishing or self.received > 1:
            # The outputs are being written (or the first SIGTERM is already being
            # handled): let them finish; the process ends right after.
            return
        self.interrupted_by = "SIGTERM"
        raise Terminated("received SIGTERM: the run was stopped (cancelled or timed out)")

    def _forward(self) -> None:
        for pid in sorted(self._workers):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        self._workers.clear()  # once is enough

    # -- pytest hooks ------------------------------------------------------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_newgateway(self, gateway: Any) -> None:
        # A popen gateway's process is the worker; execnet keeps it on its IO object.
        # Without a pid (another gateway kind) xdist's own shutdown still stops the worker.
        pid = getattr(getattr(getattr(gateway, "_io", None), "popen", None), "pid", None)
        if isinstance(pid, int):
            self._workers.add(pid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        # A signal lands between any two instructions; on Python 3.11 a frame it lands in
        # can have no line number, and pytest's terminal, rendering the interrupt, then
        # fails (TypeError in TracebackEntry.lineno) instead of finishing the session as
        # interrupted. Such frames say nothing to a reader: leave them out.
        with contextlib.suppress(Exception):
            kept = excinfo.traceback.filter(_has_line)
            if len(kept) != len(excinfo.traceback) and len(kept):
                excinfo.traceback = kept
        if self.interrupted_by is not None:
            return
        from pytest_evals.hardening.code_escapes import person_interrupted

        if type(excinfo.value) is KeyboardInterrupt or person_interrupted():
            self.interrupted_by = "SIGINT"

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self) -> Generator[None, None, None]:
        self.finishing = True
        return (yield)

    @pytest.hookimpl(optionalhook=True)
    def pytest_evals_summary(self, summary: dict[str, Any]) -> None:
        summary["interrupted"] = self.interrupted_by


def _has_line(entry: Any) -> bool:
    try:
        return isinstance(entry.lineno, int)
    except TypeError:  # tb_lineno is None
        return False


def get_termination(config: pytest.Config) -> Termination | None:
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    return plugin if isinstance(plugin, Termination) else None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    termination = Termination(config)
    config.pluginmanager.register(termination, PLUGIN_NAME)
    termination.install()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    termination = get_termination(config)
    if termination is not None:
        termination.uninstall()
