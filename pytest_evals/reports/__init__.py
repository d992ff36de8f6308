"""The reports plugin: the ``--html`` report (pytest-html hooks, HTML from the autoescaped
templates in ``templates/``), the per-run result folder, its plots and re-scoring."""
