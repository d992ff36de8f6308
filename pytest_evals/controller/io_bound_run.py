"""Under ``-n``, a run made only of suites that wait on the model endpoint runs in one process.

Such a case spends its time waiting on the network, and one process already keeps
``--evals-concurrency`` requests in flight. xdist workers add only what each of them
costs (starting Python and pytest, collecting every suite, every report sent to the
controller): about twice the CPU of a plain run, so ``-n 2`` was slower than a plain run
when anything else wanted the cores (``bench/bench_llm.py --pytest-only``, docs/scale.md).
Handing every case to one worker measured no better: the second worker and the
controller still cost their CPU. So when every path on the command line is such a suite,
the controller runs the session itself (this one process owns the whole in-flight
window) and says so at the end. Anything else keeps its workers: Python tests, suites
scored on this machine (offline judges, reference metrics, targets), directories.

``--evals-xdist-io workers`` (ini ``evals_xdist_io``, environment
``PYTEST_EVALS_XDIST_IO``) starts the workers anyway.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

XDIST_IO_ENV = "PYTEST_EVALS_XDIST_IO"
CHOICES = ("auto", "workers")

#: The note printed at the end of a run that did not start its workers (``-n N`` given).
_NOTE_KEY = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("evals").addoption(
        "--evals-xdist-io",
        choices=CHOICES,
        default=None,
        help="under -n, a run whose every path is a suite judged by the model endpoint runs "
        "in one process (auto, the default), or starts its workers anyway (workers)",
    )
    parser.addini("evals_xdist_io", "default for --evals-xdist-io (auto or workers)", default="")


def xdist_io_mode(config: pytest.Config) -> str:
    """The option, else the environment, else the ini value, else ``auto``."""
    for value in (
        config.getoption("evals_xdist_io", None),
        os.environ.get(XDIST_IO_ENV),
        config.getini("evals_xdist_io"),
    ):
        if value:
            mode = str(value).strip().lower()
            if mode not in CHOICES:
                raise pytest.UsageError(
                    f"evals_xdist_io / {XDIST_IO_ENV}: expected one of {', '.join(CHOICES)}, got {value!r}"
                )
            return mode
    return "auto"


def _workers_requested(config: pytest.Config) -> int:
    if hasattr(config, "workerinput") or config.getoption("collectonly", False):
        return 0
    if config.getoption("dist", "no") in ("no", "each"):
        return 0  # "each" runs every test on every worker: not the same run in one process
    return len(config.getoption("tx", None) or [])


def _suite_args(config: pytest.Config) -> list[Path] | None:
    """The command line's paths when every one is a suite file, else None."""
    from pytest_evals.collection.xdist_blocks import case_file_patterns
    from pytest_evals.registry.family_registry import is_suite_path

    args = list(config.args)
    if not args:
        return None
    base = config.invocation_params.dir
    paths = []
    patterns = case_file_patterns()
    for arg in args:
        path = (base / str(arg).split("::", 1)[0]).resolve()
        if not path.is_file() or not is_suite_path(path.name, patterns):
            return None
        paths.append(path)
    return paths


def _endpoint_bound(config: pytest.Config, paths: list[Path]) -> bool:
    """Every suite loads, and its cases only wait on the configured model endpoint."""
    from pytest_evals.collection.suite_loader import open_suite
    from pytest_evals.llm import is_offline
    from pytest_evals.model.errors import EvalsError

    try:
        if is_offline(config):
            return False  # the embedded judge scores on this machine's cores
    except Exception:  # invalid LLM settings: the workers' cases report them as usual
        return False
    for path in paths:
        try:
            nodeid = path.relative_to(config.rootpath).as_posix()
        except ValueError:
            nodeid = path.as_posix()
        try:
            _suite, task = open_suite(config, path, nodeid)
        except EvalsError:
            return False  # the error is reported by collection, as with workers
        except Exception:  # a family's bug: collection reports it; nothing decided here
            return False
        if not getattr(task, "endpoint_bound", False):
            return False
    return True


def pytest_configure(config: pytest.Config) -> None:
    run_in_one_process(config)


def run_in_one_process(config: pytest.Config) -> None:
    """Before xdist's pytest_configure (trylast) starts the workers: no workers for a
    run of endpoint-judged suites alone (``-n`` given, mode ``auto``)."""
    workers = _workers_requested(config)
    if workers < 1 or xdist_io_mode(config) != "auto":
        return
    paths = _suite_args(config)
    if paths is None or not _endpoint_bound(config, paths):
        return
    # What xdist's own cmdline step does for -n 0: no distribution, no workers.
    config.option.dist = "no"
    config.option.tx = []
    if hasattr(config.option, "numprocesses"):
        config.option.numprocesses = 0
    from pytest_evals.llm import get_settings

    window = get_settings(config).concurrency
    config.stash[_NOTE_KEY] = (
        f"evals: -n {workers} not used: every suite of this run waits on the model endpoint, so "
        f"this one process ran them with {window} requests in flight (workers would only add their own "
        f"cost; --evals-xdist-io workers starts them anyway; see docs/scale.md)"
    )


def one_process_note(config: pytest.Config) -> str | None:
    return config.stash.get(_NOTE_KEY, None)
