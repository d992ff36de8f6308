"""The system under test of ``generate: true`` suites.

:mod:`.target_kinds` holds the kinds of target (a Python callable, a command, a model);
:mod:`.command_adapters` builds a suite's target, adapting existing commands (input in
an environment variable, output mapping) without wrapper scripts.
"""
