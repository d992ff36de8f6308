"""Wiring of variants: the options, the paired verdicts between variants
(``pytest_evals_suite_verdict``), the terminal matrix (``pytest_evals_terminal_suite``)
and the JUnit properties (``pytest_evals_write_outputs``).

The paired verdicts need scipy.special (the exact McNemar tail), whose import is most of
their cost (0.2-0.5 s, against about 0.2 s for the tests of 2,000 cases x 3 variants).
At the end of the run it would be time after the last case; so a run that collected
variants imports it in a background thread once its first cases are done, while the
rest wait on the network (:class:`StatisticsPreload`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_evals.controller.suite_verdict import SuiteSummary
    from pytest_evals.model.case_result import CaseResult
    from pytest_evals.tasks.task_contract import Task


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evals")
    group.addoption(
        "--evals-variant", action="append", default=[], metavar="NAME:KEY=VALUE[,KEY=VALUE]",
        help="run every suite's cases also under variant NAME (repeatable): model, temperature, system_prompt, "
        "prompt_template, target, or any dotted suite field; e.g. mini:model=gpt-4o-mini. "
        "--evals-model a,b is one variant per model",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    from pytest_evals.collection.variant_gate_metrics import PAIRED_RULE_KEY

    # Collection checks the metrics variant gates name; the paired rules are this layer's.
    config.stash[PAIRED_RULE_KEY] = has_paired_rule
    model = config.getoption("evals_model", None)
    if not config.getoption("evals_variant", None) and not (isinstance(model, str) and "," in model):
        return  # every run imports this plugin: nothing heavy unless variants are asked for
    from pytest_evals.collection.variant_items import cli_variants, split_model_option

    split_model_option(config)
    cli_variants(config)  # a malformed --evals-variant is a usage error now


#: Items finished before the background import starts: the first window of requests is
#: on its way by then, so the import does not delay the first answers.
PRELOAD_AFTER_ITEMS = 100


class StatisticsPreload:
    """Imports the verdicts' statistics library in a daemon thread, once, after
    :data:`PRELOAD_AFTER_ITEMS` items (a failed import is left to the verdicts to report)."""

    def __init__(self) -> None:
        self.items = 0
        self.thread: threading.Thread | None = None

    def pytest_runtest_logfinish(self) -> None:
        if self.thread is not None:
            return
        self.items += 1
        if self.items >= PRELOAD_AFTER_ITEMS:
            self.thread = threading.Thread(target=_import_statistics, name="pytest-evals-preload", daemon=True)
            self.thread.start()


def _import_statistics() -> None:
    # A failed import is retried by the verdicts, which report what is wrong.
    with contextlib.suppress(Exception):
        import scipy.special  # noqa: F401


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    import sys

    # Only a run that read a suite imported the variant machinery (and its pydantic models):
    # a run of plain tests must not import it here.
    items = sys.modules.get("pytest_evals.collection.variant_items")
    if items is None:
        return
    config = session.config
    HAS_VARIANTS_KEY = items.HAS_VARIANTS_KEY
    # The verdicts are computed where the results end up: not on an xdist worker.
    if config.stash.get(HAS_VARIANTS_KEY, False) and not hasattr(config, "workerinput") \
            and not config.option.collectonly:
        config.pluginmanager.register(StatisticsPreload(), "pytest_evals_statistics_preload")


def has_paired_rule(task: Task[Any], metric: str) -> bool:
    from pytest_evals.regression.variant_verdicts import contribution_rule

    return contribution_rule(task, metric) is not None


@pytest.hookimpl(trylast=True)  # after the regression plugin recorded the suite's settings
def pytest_evals_suite_verdict(
    config: pytest.Config, suite: SuiteSummary, task: Task[Any], results: Sequence[CaseResult]
) -> None:
    if "variants" not in suite.sections:
        return
    from pytest_evals.regression.variant_verdicts import (
        apply_baseline_to_variants,
        apply_variant_verdicts,
    )

    apply_variant_verdicts(config, suite, task, results)  # type: ignore[arg-type]
    apply_baseline_to_variants(config, suite, task, results)


def pytest_evals_terminal_suite(
    config: pytest.Config, terminalreporter: pytest.TerminalReporter, suite: SuiteSummary
) -> None:
    if "variants" not in suite.sections:
        return
    from pytest_evals.output.variant_tables import terminal_lines

    for text, style in terminal_lines(suite.to_json(), verbose=config.get_verbosity() > 0):
        terminalreporter.write_line(text, **style)


@pytest.hookimpl(trylast=True)
def pytest_evals_write_outputs(config: pytest.Config, summary: dict[str, Any]) -> None:
    from pytest_evals.output.variant_tables import junit_properties

    junit_properties(config, summary)
