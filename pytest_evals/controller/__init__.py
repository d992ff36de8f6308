"""The controller: results of every case, each suite's verdict and the exit status.

Exists once per run (the xdist controller, or the plain process), like pytest's LogXML.
:mod:`.aggregator` collects per-case results from test reports and decides the exit
status; :mod:`.result_spool` keeps the full results (details included) on disk;
:mod:`.suite_verdict` builds a suite's typed summary, its typed verdict reasons and its
verdict (features add theirs through the ``pytest_evals_suite_verdict`` hook);
:mod:`.run_report` is what the output layer and the features read once the run is
decided; :mod:`.progress` shows live per-suite progress.
"""
