"""The task families: each subpackage registers itself like a third-party plugin.

``classification`` (GOV.UK Chat's classifiers and retrieval), ``rag`` (GOV.UK Chat's
rag_answers), ``halueval`` (the HaluEval benchmark), ``harpia`` (HarpIA Lab's input and
output files) and ``redteam`` (rm-bias run files and their viewer). Each has a
``family.py`` named in the ``pytest_evals.families`` entry point group; nothing outside
this package names a family.
"""
