"""The ``pytest-evals`` command: its subcommands and ``compare``.

:mod:`.main` dispatches to the core's commands and the families' ones;
:mod:`.compare_runs` compares two runs case by case.
"""
