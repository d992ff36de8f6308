"""Reports: what a person reads after a run, beyond the terminal.

Owns the pytest-html integration (:mod:`.html_report`, :mod:`.summary_html`, :mod:`.case_detail`,
:mod:`.detail_store`; HTML from the autoescaped Jinja2 templates in ``templates/``), the
per-run result folder of ``--evals-report-dir`` (:mod:`.result_files`, written through the
``pytest_evals_write_outputs`` hook), its plots (:mod:`.plots`, the ``reports`` extra:
matplotlib), re-scoring a run from its folder (:mod:`.rescore_command`) and the per-session
state these share (:mod:`.report_state`), wired by :mod:`.report_plugin`.
"""
