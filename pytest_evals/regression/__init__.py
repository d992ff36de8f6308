"""Regression gates: is this run worse than a baseline run of the same cases?

Owns loading a baseline run (``--evals-baseline``) and checking it before it is trusted
(readable, holding the suite, the same inputs per case id by their fingerprints, the
same recorded settings), pairing its cases with this run's by suite, case id and input,
the paired tests (exact McNemar for pass/fail proportions, a seeded paired randomization
test and bootstrap interval for every ratio-of-sums metric: means, accuracy, precision,
recall, F-beta), ``max_drop``/``max_rise`` gates and their three verdicts (regression, no
regression, inconclusive), the Markdown summary for CI, and ``pytest-evals power``.
"""
