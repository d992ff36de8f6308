"""The controller: results of every case, each suite's verdict and the exit status.

Exists once per run (the xdist controller, or the plain process), like pytest's LogXML.
:mod:`.aggregator` collects per-case results from test reports and decides the exit
status; :mod:`.suite_verdict` builds a suite's typed summary and verdict;
:mod:`.progress` shows live per-suite progress.
"""
