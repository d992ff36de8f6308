"""pytest entry point: wires the pytest_evals modules to pytest's hooks.

No evaluation logic lives here. Every pytest run of anyone who installs pytest_evals
loads this module, so it imports nothing heavy: the modules behind each hook (the
suite model, pydantic, yaml, asyncio, the LLM layer, numpy) are imported inside the
hooks, when a suite is actually collected or run (as xdist's and Hypothesis' plugins
do). ``tests/core/test_core_startup.py`` keeps it that way.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals import hookspecs
from pytest_evals.collection.xdist_blocks import (
    BlockScheduling,
    case_file_patterns,
    set_extra_patterns,
)
from pytest_evals.registry.core_plugins import CORE_PLUGINS
from pytest_evals.registry.family_registry import is_suite_path

if TYPE_CHECKING:
    from pytest_evals.controller.aggregator import Aggregator

_PREVIOUS_PATTERNS = pytest.StashKey[tuple[str, ...]]()
#: Set once a test function is parametrized by ``pytest_evals.cases`` (collection/cases_marker.py).
_CASES_MARKER_USED = pytest.StashKey[bool]()
#: cases_marker.MARKER, named here so that runs which never use it do not import it.
CASES_MARKER = "evals_cases"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)
    from pytest_evals.hardening import parser_threads

    parser_threads.guard_parser_threads(pluginmanager.rewrite_hook)  # before any of our threads starts
    from pytest_evals.registry.family_registry import registry

    # Task families' own plugins (their options: pytest_addoption is a historic hook,
    # so a plugin registered now still adds its options).
    for name in registry().plugins:
        parser_threads.import_plugin_unrewritten(pluginmanager, name)


def pytest_plugin_registered(plugin: object, manager: pytest.PytestPluginManager) -> None:
    # Where pytest_plugins would register them (after this module), so hook order holds.
    if plugin is sys.modules[__name__]:
        from pytest_evals.hardening.parser_threads import import_plugin_unrewritten

        for name in CORE_PLUGINS:
            import_plugin_unrewritten(manager, name)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evals", "LLM evaluation suites (pytest_evals)")
    group.addoption("--evals-json", metavar="PATH", help="write the machine-readable run summary (JSON) to PATH")
    group.addoption(
        "--evals-report-dir",
        metavar="DIR",
        help="write this run's result files into a timestamped folder under DIR",
    )
    group.addoption(
        "--evals-generate", "--generate",  # --generate / --no-generate: GOV.UK Chat's spellings
        action="store_true",
        default=None,
        help="override every suite's 'generate' field to true (run the target)",
    )
    group.addoption(
        "--no-evals-generate", "--no-generate",
        dest="evals_generate",
        action="store_false",
        help="override every suite's 'generate' field to false (score saved outputs)",
    )
    group.addoption("--evals-n-runs", type=int, metavar="N", help="override 'n_runs' of every suite")
    group.addoption("--evals-sample", type=int, metavar="N", help="evaluate a seeded sample of N cases of every suite (its task must sample): a partial run")
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
    group.addoption(
        "--evals-allow-partial",
        action="store_true",
        default=False,
        help="let a suite pass on part of its cases (deselected, sampled by --evals-sample, skipped, "
        "not run after -x); its verdict says PARTIAL. Without it such a run fails",
    )
    group.addoption(
        "--evals-suite-pattern",
        action="append",
        default=[],
        metavar="GLOB",
        help="also collect files matching GLOB as suites (repeatable), e.g. '*.yaml' "
        "for a repository's config/defaults/<task>.yaml",
    )
    parser.addini("evals_suite_patterns", "extra file globs collected as suites (see --evals-suite-pattern)", type="args", default=[])
    parser.addini("evals_report_dir", "default for --evals-report-dir", default="")
    parser.addini("evals_allow_partial", "default for --evals-allow-partial", type="bool", default=False)
    parser.addini("evals_case_timeout", "seconds an item waits for its evaluation (default 900)", default="900")
    parser.addini("evals_prefetch_window", "cases evaluated ahead of the running item (default max(4 x concurrency, 256))", default="0")
    parser.addini("evals_partition", "send suite cases to xdist workers in fixed blocks (default true)", type="bool", default=True)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        from pytest_evals.output.artifacts import check_output_paths

        check_output_paths(config)  # a device or folder as --evals-json: usage error, before anything starts
    config.addinivalue_line("markers", f"{CASES_MARKER}(path, ...): parametrize with the cases of a JSONL file")
    patterns = [*config.getini("evals_suite_patterns"), *(config.getoption("evals_suite_pattern") or [])]
    config.stash[_PREVIOUS_PATTERNS] = set_extra_patterns(patterns)
    from pytest_evals.collection.case_executor import EXECUTOR_KEY
    from pytest_evals.collection.population import population_counter
    from pytest_evals.collection.suite_loader import SUITES_KEY, SuiteCache
    from pytest_evals.controller.aggregator import AGGREGATOR_KEY, Aggregator, is_controller
    from pytest_evals.worker.case_runner import RUNNER_KEY, CaseRunner
    from pytest_evals.worker.heap_freeze import HeapFreezer

    config.stash.setdefault(SUITES_KEY, SuiteCache(config))  # io_bound_run.py may have read suites
    # Before the aggregator: it reads the counts in its own pytest_collection_finish.
    config.pluginmanager.register(population_counter(config), "pytest_evals_population")
    runner = CaseRunner(config)
    config.stash[RUNNER_KEY] = runner
    config.stash[EXECUTOR_KEY] = runner
    config.pluginmanager.register(runner, "pytest_evals_runner")
    aggregator: Aggregator | None = None
    if is_controller(config):
        from pytest_evals.output.artifacts import GeneratedWriter, SummaryWriter
        from pytest_evals.output.terminal_report import TerminalReport

        # Like pytest's LogXML: results, verdicts and the exit rules live only here.
        aggregator = Aggregator(config)
        config.stash[AGGREGATOR_KEY] = aggregator
        config.pluginmanager.register(aggregator, "pytest_evals_aggregator")
        for part in (GeneratedWriter(), SummaryWriter(), TerminalReport()):
            config.pluginmanager.register(part, f"pytest_evals_{type(part).__name__}")
    count = (lambda: len(aggregator.results)) if aggregator is not None else (lambda: 0)
    config.pluginmanager.register(HeapFreezer(config, count), "pytest_evals_heap")
    if BlockScheduling.wanted(config):
        config.pluginmanager.register(BlockScheduling(), "pytest_evals_partition")


def pytest_unconfigure(config: pytest.Config) -> None:
    from pytest_evals.controller.aggregator import get_aggregator
    from pytest_evals.worker.case_runner import RUNNER_KEY

    runner = config.stash.get(RUNNER_KEY, None)
    if runner is not None:
        runner.close()
    aggregator = get_aggregator(config)
    if aggregator is not None:
        aggregator.close()
    previous = config.stash.get(_PREVIOUS_PATTERNS, None)
    if previous is not None:
        # In-process runs (pytester) must not leak their patterns into the outer session.
        set_extra_patterns(previous)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if is_suite_path(file_path.name, case_file_patterns()):
        from pytest_evals.collection.suite_items import SuiteFile

        return SuiteFile.from_parent(parent, path=file_path)
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker(CASES_MARKER) is None:
        return
    from pytest_evals.collection import cases_marker as api

    metafunc.config.stash[_CASES_MARKER_USED] = True
    api.generate_tests(metafunc)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    yield
    if item.config.stash.get(_CASES_MARKER_USED, False):
        from pytest_evals.collection import cases_marker as api

        api.load_param(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    # Suite items (suite_items.py) put their result on the report; others lack the method.
    attach = getattr(item, "evals_attach_result", None)
    if attach is not None:
        attach(report, call)
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # A case failure reaches the xdist controller as text and crash location (suite_items.py).
    crash = getattr(report, "evals_crash", None)
    if crash is not None and isinstance(report.longrepr, str):
        from pytest_evals.collection.suite_items import restore_failure_repr

        restore_failure_repr(report, crash)
