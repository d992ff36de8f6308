"""pytest collection: suite files become items, one per case.

:mod:`.suite_items` (the ``pytest.File`` and ``pytest.Item`` classes), :mod:`.suite_loader`
(each suite read once per process, with the command line's overrides),
:mod:`.case_ids` (unique node ids), :mod:`.xdist_blocks` (which worker gets which cases),
:mod:`.cases_marker` (``pytest_evals.cases`` for your own test functions) and
:mod:`.case_executor` (where an item finds the worker that evaluates it: collection never
imports the worker).
"""
