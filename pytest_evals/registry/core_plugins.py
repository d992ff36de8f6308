"""The core's own pytest plugins, one per area, each registering its options and hooks.

plugin.py registers them right after itself (where ``pytest_plugins`` would), not through
``pytest_plugins``: pytest looks every name listed there up in every installed
distribution's entry points first, one full metadata scan per name, paid by every pytest
process of anyone who installs pytest_evals (and by each xdist worker).
"""

from __future__ import annotations

CORE_PLUGINS = (
    "pytest_evals.llm.llm_plugin",
    # batch mode: its options, the batch phase before the item loop, its summary
    "pytest_evals.worker.batch_plugin",
    "pytest_evals.controller.progress", "pytest_evals.output.failure_summary",  # (terminal: N failures shown)
    "pytest_evals.reports.report_plugin", "pytest_evals.output.report_paths",  # (--html path)
    "pytest_evals.reports.variant_matrix_html",
    "pytest_evals.hardening.report_guard", "pytest_evals.hardening.termination",  # (SIGTERM as Ctrl-C)
    "pytest_evals.regression.regression_plugin", "pytest_evals.regression.variant_plugin",
    "pytest_evals.collection.last_failed_pairs",  # (--lf reruns a failed case's variants with it)
    "pytest_evals.controller.io_bound_run",  # (-n not used for endpoint-judged suites alone)
)
