"""Everything a run writes: terminal, JSON summary, JUnit properties, generated outputs.

:mod:`.artifacts` (the core's files, written through the ``pytest_evals_write_outputs``
hook, and atomic writes), :mod:`.terminal_report` (the one terminal reporter; features
add lines through the ``pytest_evals_terminal_suite`` and ``pytest_evals_terminal_summary``
hooks),
:mod:`.html_templating` (Jinja2 with autoescape), :mod:`.strict_json` (JSON that other
tools accept), :mod:`.fast_json` (reading big files back) and :mod:`.run_reader` (per-case
results of an earlier run).
"""
