"""pytest entry point: wires the pytest_evals modules to pytest's hooks.

No evaluation logic lives here. Heavy libraries are imported by the modules that need
them, when they need them, so loading the plugin costs a few milliseconds.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_evals import api, hookspecs
from pytest_evals.collect import CaseItem, SuiteErrorItem, SuiteFile
from pytest_evals.heap import HeapFreezer
from pytest_evals.partition import CASE_FILE_PATTERNS
from pytest_evals.results import REPORT_ATTR, CaseResult
from pytest_evals.session import STATE_KEY, EvalSession, get_state
from pytest_evals.suite import is_suite_path

# Each area registers its own options and hooks.
pytest_plugins = [
    "pytest_evals.llm.plugin",
    "pytest_evals.progress",
    "pytest_evals.harpia.plugin",
    "pytest_evals.reports.plugin",
    "pytest_evals.regression.plugin",
]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evals", "LLM evaluation suites (pytest_evals)")
    group.addoption("--evals-json", metavar="PATH", help="write the machine-readable run summary (JSON) to PATH")
    group.addoption(
        "--evals-report-dir",
        metavar="DIR",
        help="write this run's result files into a timestamped folder under DIR",
    )
    group.addoption(
        "--evals-generate",
        action="store_true",
        default=None,
        help="override every suite's 'generate' field to true (run the target)",
    )
    group.addoption(
        "--no-evals-generate",
        dest="evals_generate",
        action="store_false",
        help="override every suite's 'generate' field to false (score saved outputs)",
    )
    group.addoption("--evals-n-runs", type=int, metavar="N", help="override 'n_runs' of every suite")
    group.addoption("--evals-sample", type=int, metavar="N", help="evaluate a seeded sample of N cases (suites that sample)")
    group.addoption("--evals-seed", type=int, metavar="S", help="sampling/choice seed (suites that sample)")
    group.addoption(
        "--evals-set",
        action="append",
        default=[],
        metavar="[SUITE:]KEY=VALUE",
        help="override a suite field for all suites, or for the suite named SUITE "
        "(dotted keys reach nested fields, e.g. metrics.faithfulness.threshold=0.9)",
    )
    group.addoption(
        "--evals-strict",
        action="store_true",
        default=False,
        help="fail the run on any failed case even when its suite's gates pass",
    )
    parser.addini("evals_report_dir", "default for --evals-report-dir", default="")
    parser.addini("evals_case_timeout", "seconds an item waits for its evaluation (default 900)", default="900")
    parser.addini(
        "evals_prefetch_window",
        "cases evaluated ahead of the running item (default max(4 x concurrency, 256))",
        default="0",
    )
    parser.addini("evals_partition", "send suite cases to xdist workers in fixed blocks (default true)", type="bool", default=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{api.MARKER}(path, ...): parametrize with the cases of a JSONL file")
    state = EvalSession(config)
    config.stash[STATE_KEY] = state
    config.pluginmanager.register(state, "pytest_evals_session")
    config.pluginmanager.register(HeapFreezer(config, lambda: len(state.results)), "pytest_evals_heap")
    if config.pluginmanager.hasplugin("xdist") and config.getini("evals_partition"):
        config.pluginmanager.register(_XdistPartition(), "pytest_evals_partition")


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        state.close()


class _XdistPartition:
    @pytest.hookimpl(trylast=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getoption("dist", "no") != "load":
            return None
        from pytest_evals.partition import make_scheduler_class

        return make_scheduler_class()(config, log)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if is_suite_path(file_path.name, CASE_FILE_PATTERNS):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    api.generate_tests(metafunc)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    yield
    api.load_param(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if isinstance(item, CaseItem) and item.evals_result is not None:
        # The result rides on the report of the phase that decided the outcome.
        if call.when == "call" or (call.when == "setup" and report.outcome != "passed"):
            setattr(report, REPORT_ATTR, item.evals_result.to_json())
        elif call.when == "teardown":
            # The session keeps its own copy; items live to the end of the run.
            item.evals_result = None
    elif isinstance(item, SuiteErrorItem) and call.when == "setup":
        result = CaseResult(
            suite=item.parent.nodeid if item.parent else item.nodeid,
            task="",
            case_id="suite-error",
            source=str(item.path),
            status="error",
            message=item.message,
            error_kind="config",
        )
        setattr(report, REPORT_ATTR, result.to_json())
    return report


__all__ = ["get_state"]
