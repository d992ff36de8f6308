"""HarpIA Lab support: the input file, session-wide batching, scores, output and log files.

The metrics themselves live in :mod:`pytest_evals.metrics.reference`; the task that runs a
HarpIA file as a suite is :class:`pytest_evals.harpia.task.Harpia`.
"""
