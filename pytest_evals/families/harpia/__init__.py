"""The HarpIA family: HarpIA Lab input files run as suites, with HarpIA's output and log files.

Owns the task (:mod:`.task`, ``task: harpia``; a ``*.harpia.json`` file is a suite by its
name, :mod:`.family`), reading the input file (:mod:`.document`), session-wide batching
of model-backed metrics (:mod:`.batcher`), the per-instance deadline (:mod:`.deadline`),
scores (:mod:`.scores`), the ``--evals-harpia-output`` / ``--evals-harpia-log`` files
(:mod:`.writers`, written by :mod:`.plugin` through ``pytest_evals_write_outputs``) and
their JSON Schemas (``schemas/``). Docs: docs/harpia.md.

The metrics themselves live in :mod:`pytest_evals.metrics.reference`; the task that runs a
HarpIA file as a suite is :class:`pytest_evals.families.harpia.task.Harpia`.
"""
