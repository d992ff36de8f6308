"""Regression gates: is this run worse than a baseline run of the same cases?

Owns loading a baseline run (``--evals-baseline``), pairing its cases with this run's
by suite and case id, the paired tests (exact McNemar for pass/fail proportions, a
seeded paired randomization test and bootstrap interval for every ratio-of-sums metric:
means, accuracy, precision, recall, F-beta), ``max_drop``/``max_rise`` gates, the
Markdown summary for CI, and ``pytest-evals power``.
"""
