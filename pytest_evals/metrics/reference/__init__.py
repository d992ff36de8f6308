"""Reference-based metrics (BLEU, chrF, TER, ROUGE, BERTScore, METEOR, ...) for HarpIA suites.

Each metric wraps the library it names and is usable on its own::

    from pytest_evals.metrics.reference import Pair, build_metric

    bleu = build_metric("bleu", {"smoothing_function": "method1"})
    [scored] = bleu.score_pairs([Pair("the cat sat", ("the cat sat down", "a cat sat"))])
    scored.result  # {"bleu": ...}: NLTK's sentence_bleu with both references
"""

from __future__ import annotations

from pytest_evals.metrics.reference.reference_metric import (
    MetricError,
    MetricParams,
    Pair,
    ReferenceMetric,
    Result,
    Scored,
)
from pytest_evals.metrics.reference.registry import (
    METRICS,
    BadParameters,
    UnknownMetric,
    accepted_parameters,
    build_metric,
    canonical_id,
    metric_class,
)

__all__ = [
    "METRICS",
    "BadParameters",
    "MetricError",
    "MetricParams",
    "Pair",
    "ReferenceMetric",
    "Result",
    "Scored",
    "UnknownMetric",
    "accepted_parameters",
    "build_metric",
    "canonical_id",
    "metric_class",
]
