"""The values every layer passes around: what a case produced and what a suite measured.

:mod:`.errors` (the error types that decide how a case is reported), :mod:`.case_ref`
(where a case lives), :mod:`.case_result` (a case's result, the JSON that rides on the
test report), :mod:`.case_usage` (model usage counted per case), :mod:`.metric_value`
(a metric with its interval, and metric trees), :mod:`.value_format` (how values,
intervals and gates are written in every output) and :mod:`.gate` (suite gates and their
results). Imports only :mod:`pytest_evals.stats`.
"""
