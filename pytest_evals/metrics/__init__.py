"""Metric functions shared by the task families, independent of pytest.

Owns :mod:`.label_metrics` (binary counts and multiclass confusion matrices with
their intervals, used by the classification, HaluEval and RAG tasks) and
:mod:`.reference` (the reference-based metrics of HarpIA suites: BLEU, chrF, TER, ROUGE,
BERTScore, METEOR, ...). Generic metric values and trees are in
:mod:`pytest_evals.model.metric_value`; statistics in :mod:`pytest_evals.stats.intervals`.
"""
