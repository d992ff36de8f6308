"""Metric ids -> classes, and building a metric from HarpIA's ``{id, parameters}``.

Classes are named as "module:Class" and imported on first use, so listing the ids (for
an error message or the docs) loads no metric library.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from pytest_evals.metrics.reference.reference_metric import ReferenceMetric

_PKG = "pytest_evals.metrics.reference"

#: metric id -> "module:Class"
METRICS: dict[str, str] = {
    "bleu": f"{_PKG}.bleu:NltkBleu",
    "sacrebleu": f"{_PKG}.sacre:SacreBleu",
    "chrf": f"{_PKG}.sacre:SacreChrf",
    "ter": f"{_PKG}.sacre:SacreTer",
    "rouge": f"{_PKG}.rouge:Rouge",
    "bertscore": f"{_PKG}.bertscore:BertScore",
    "meteor": f"{_PKG}.meteor:Meteor",
    "exact_match": f"{_PKG}.exact:ExactMatch",
    "edit_distance": f"{_PKG}.edit:EditDistance",
    "semantic_similarity": f"{_PKG}.semantic:SemanticSimilarity",
    "llm_judge": f"{_PKG}.judged_metric:LlmJudge",
}


class UnknownMetric(KeyError):
    pass


class BadParameters(ValueError):
    """Parameters a metric does not accept; the message lists what it does accept."""


def canonical_id(metric_id: str) -> str:
    """Metric ids are case-insensitive ("BLEU" is "bleu"); '-' and spaces read as '_'."""
    return str(metric_id).strip().lower().replace("-", "_").replace(" ", "_")


def metric_class(metric_id: str) -> type[ReferenceMetric]:
    spec = METRICS.get(canonical_id(metric_id))
    if spec is None:
        raise UnknownMetric(f"unknown metric id {metric_id!r}; accepted: {', '.join(METRICS)}")
    from pytest_evals.registry.dotted_names import resolve_name

    cls: type[ReferenceMetric] = resolve_name(spec, f"metric {metric_id!r}: class")
    return cls


def accepted_parameters(metric_id: str) -> list[str]:
    return list(metric_class(metric_id).params_model.model_fields)


def build_metric(metric_id: str, parameters: Mapping[str, Any] | None = None) -> ReferenceMetric:
    """A metric from its id and parameters; UnknownMetric / BadParameters say what is accepted."""
    cls = metric_class(metric_id)
    params = dict(parameters or {})
    accepted = list(cls.params_model.model_fields)
    unknown = [k for k in params if k not in accepted]
    if unknown:
        raise BadParameters(
            f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"{canonical_id(metric_id)!r} accepts: {', '.join(accepted)}"
        )
    try:
        model = cls.params_model.model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(
            f"parameter {'.'.join(str(p) for p in e['loc']) or '(parameters)'!r}: {e['msg']}" for e in exc.errors()
        )
        raise BadParameters(problems) from None
    from pytest_evals.metrics.reference.reference_metric import MetricError

    try:
        return cls(model)
    except MetricError as exc:
        raise BadParameters(str(exc)) from None
