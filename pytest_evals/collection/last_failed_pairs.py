"""``--lf`` and ``--ff`` on a suite with variants: a failed case reruns with all its variants.

Each variant of a case is its own item (``c1[big]``, ``c1[mini]``), and pytest's
last-failed plugin keeps only the items that failed: after ``c1[big]`` failed and
``c1[mini]`` passed, ``--lf`` would run ``c1[big]`` alone and the paired comparisons
would have nothing to pair it with. So, when a suite file is collected, the other
variants of every case with a recorded failure are added to the plugin's failures, and
they are selected with it.

pytest also filters a file's items while collecting it under ``--lf`` (unless the file
was named on the command line), so the items it left out would never be counted as
deselected; the file's items are given back and pytest's own selection deselects them,
which the summary reports (``2 failed, 18 deselected``) as for a named file.

Variants added this way that did not run (``-k``, ``-x``) are taken out again before
pytest saves its failures, so a pass is never recorded as a failure.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest


def _last_failed(config: pytest.Config) -> Any:
    plugin = config.pluginmanager.get_plugin("lfplugin")
    if plugin is None or not getattr(plugin, "active", False) or not getattr(plugin, "lastfailed", None):
        return None
    return plugin


def _id(node: Any) -> Any:
    # pytest >= 9.2 keys its failures by structured ids (``node.id``), older ones by text.
    return getattr(node, "id", None) or node.nodeid


class LastFailedPairs:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        #: Variant items made failures here, and the items that reported this run.
        self.added: set[Any] = set()
        self.reported: set[Any] = set()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, Any, Any]:
        report = yield
        from pytest_evals.collection.suite_items import CaseItem, SuiteFile

        if not isinstance(collector, SuiteFile) or report.outcome != "passed":
            return report
        plugin = _last_failed(self.config)
        yielded: list[pytest.Item] = getattr(collector, "yielded", [])
        if plugin is None or not yielded:
            return report
        failures = plugin.lastfailed
        cases = [i for i in yielded if isinstance(i, CaseItem)]
        # The variants of one case share its position (a variant's task is its own).
        failed = {i.index for i in cases if _id(i) in failures}
        if not failed:
            return report
        for item in cases:
            if item.index in failed and getattr(item.task.suite, "variant", None) is not None:
                key = _id(item)
                if key not in failures:
                    failures[key] = True
                    self.added.add(key)
        if self.config.getoption("lf"):
            report.result[:] = yielded
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.added:
            self.reported.add(_id(report))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        plugin = _last_failed(self.config)
        if not self.added or plugin is None:
            return
        for key in self.added - self.reported:
            plugin.lastfailed.pop(key, None)


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("lf", False) or config.getoption("failedfirst", False):
        config.pluginmanager.register(LastFailedPairs(config), "pytest_evals_last_failed_pairs")
