"""Per-session state of the reports plugin (controller only), reached through a StashKey."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from pytest_evals.registry.family_registry import suite_file_stem

if TYPE_CHECKING:
    from pytest_evals.reports.plots import Plot

REPORT_STATE_KEY = pytest.StashKey["ReportState"]()


@dataclass
class SuiteInfo:
    name: str
    #: Per-case thresholds of the suite's ``metrics`` list (name -> threshold).
    thresholds: dict[str, float] = field(default_factory=dict)


#: How much of each case the HTML report embeds (``--evals-html-detail``).
DetailMode = Literal["auto", "full", "failures"]


class ReportState:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        mode = config.getoption("evals_html_detail", None) or config.getini("evals_html_detail") or "auto"
        if mode not in ("auto", "full", "failures"):
            raise pytest.UsageError(f"evals_html_detail: expected auto, full or failures, got {mode!r}")
        self.detail_mode: DetailMode = mode  # type: ignore[assignment]  # checked just above
        self.max_mb = _positive(config, "evals_html_max_mb", float)
        self.max_rows = int(_positive(config, "evals_html_max_rows", int))
        self.field_chars = int(_positive(config, "evals_html_field_chars", int))
        self.log_chars = int(_positive(config, "evals_html_log_chars", int))
        self._suites: dict[str, SuiteInfo] = {}
        self._plots: dict[str, list[Plot]] | None = None
        self.written: dict[str, Any] = {}

    @property
    def report_dir(self) -> Path | None:
        from pytest_evals.output.artifacts import run_dir

        wanted = self.config.getoption("evals_report_dir", None) or self.config.getini("evals_report_dir")
        return run_dir(self.config) if wanted else None

    def run_summary(self) -> dict[str, Any] | None:
        from pytest_evals.controller.run_report import get_run_report

        report = get_run_report(self.config)
        return report.summary if report is not None else None

    def suite_info(self, suite_id: str) -> SuiteInfo:
        info = self._suites.get(suite_id)
        if info is None:
            info = self._load_suite_info(suite_id)
            self._suites[suite_id] = info
        return info

    def _load_suite_info(self, suite_id: str) -> SuiteInfo:
        from pytest_evals.collection.suite_loader import open_suite
        from pytest_evals.model.errors import EvalsError

        path = self.config.rootpath / suite_id
        try:
            suite, _task = open_suite(self.config, path, suite_id)
        except (EvalsError, OSError):
            # A suite that no longer opens is named after its file.
            return SuiteInfo(suite_file_stem(suite_id))
        thresholds = {m.name: float(m.threshold) for m in suite.config.metrics if m.threshold is not None}
        return SuiteInfo(suite.name, thresholds)

    def plots(self) -> dict[str, list[Plot]]:
        """Plots per suite id, drawn once (for the HTML report and the result folder)."""
        if self._plots is None:
            from pytest_evals.controller.run_report import get_run_report
            from pytest_evals.reports.plots import suite_plots

            report = get_run_report(self.config)
            by_suite = report.results_by_suite() if report is not None else {}
            summary = report.summary if report is not None else {}
            self._plots = {}
            for s in summary.get("suites") or []:
                suite_id = str(s.get("suite"))
                try:
                    self._plots[suite_id] = suite_plots(s, by_suite.get(suite_id, []))
                except Exception as exc:  # a plotting bug must not cost the report
                    from pytest_evals.registry.missing_extras import describe

                    problems = s.setdefault("problems", [])
                    problems.append(f"plots could not be drawn: {describe(exc)}")
                    self._plots[suite_id] = []
        return self._plots


def _positive(config: pytest.Config, name: str, kind: type) -> Any:
    raw = config.getini(name)
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{name}: expected a number, got {raw!r}") from None
    if value <= 0:
        raise pytest.UsageError(f"{name}: must be greater than 0, got {raw!r}")
    return value
