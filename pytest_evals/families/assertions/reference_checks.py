"""Assertions against the case's reference(s): the HarpIA metrics and ``similar``.

The metrics are the ones of :mod:`pytest_evals.metrics.reference` (BLEU, sacreBLEU,
chrF, TER, ROUGE, METEOR, BERTScore, exact match, edit distance, semantic similarity),
built from the assertion's keys as HarpIA builds them from its ``parameters``; an
assertion adds only its ``threshold`` (in the metric's own units) and its weight.
``similar`` is the cosine similarity of the embedded model's sentence embeddings
(the offline judge's model, shared with every task of the run), the best over the
references.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field

from pytest_evals.families.assertions.assertion_outcome import CaseView, Outcome, clamp01
from pytest_evals.families.assertions.deterministic_checks import AssertionProblem, CommonParams
from pytest_evals.model.errors import CaseInputError, ErrorKind, EvalsError

if TYPE_CHECKING:
    from pytest_evals.metrics.reference.reference_metric import ReferenceMetric
    from pytest_evals.tasks.eval_context import EvalContext

#: HarpIA's judged metric is the ``llm_rubric`` assertion here.
EXCLUDED = frozenset({"llm_judge"})
#: Thresholds when an assertion gives none (a metric of graded similarity has no
#: natural cut: its assertion must say one).
DEFAULT_THRESHOLDS = {"exact_match": 1.0}
SIMILAR_DEFAULT = 0.75


class MetricFailed(EvalsError):
    """A reference metric could not score this case (library error, missing data)."""

    kind = ErrorKind.METRIC


def reference_types() -> list[str]:
    from pytest_evals.metrics.reference.registry import METRICS

    return [m for m in METRICS if m not in EXCLUDED]


def missing_reference(view: CaseView, name: str) -> CaseInputError:
    return CaseInputError(
        f"{view.source}: field {view.reference_field!r}: assertion {name!r} compares with the "
        "case's reference, and the case has none (give 'reference' or 'references')"
    )


@dataclass
class MetricCheck:
    """One reference metric, built once per assertion."""

    name: str
    metric: ReferenceMetric
    threshold: float
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def higher_is_better(self) -> bool:
        return bool(self.metric.higher_is_better)

    @property
    def bounds(self) -> tuple[float, float] | None:
        for key, lo, hi in self.metric.bounds:
            if key == self.metric.primary:
                return (lo, hi)
        return None

    def warm_up(self, ctx: EvalContext) -> None:
        """Import the library (and load its model) before any case scores with it."""
        from pytest_evals.metrics.reference.reference_metric import MetricError

        self._share_embedder(ctx)
        with self._lock:
            try:
                self.metric.check_environment()
                self.metric.warm_up()
            except MetricError:
                pass  # each case reports it

    def _share_embedder(self, ctx: EvalContext) -> None:
        if getattr(self.metric, "encoder", "absent") is None:
            # semantic_similarity: the run's one embedded model, not a second copy.
            self.metric.encoder = ctx.embedder.encode  # type: ignore[attr-defined]

    def _score(self, output: str, references: list[str]) -> Any:
        from pytest_evals.metrics.reference.reference_metric import MetricError, Pair

        with self._lock:  # the libraries' tokenizers and models are not shared safely
            try:
                self.metric.check_environment()
            except MetricError as exc:
                raise MetricFailed(f"assertion {self.name!r}: {exc}") from None
            [scored] = self.metric.score_pairs([Pair(output, tuple(references))])
        return scored

    async def run(self, view: CaseView, ctx: EvalContext) -> Outcome:
        if not view.references:
            raise missing_reference(view, self.name)
        self._share_embedder(ctx)
        scored = await asyncio.to_thread(self._score, view.output, view.references)
        if scored.error is not None:
            raise MetricFailed(f"{view.source}: assertion {self.name!r}: {scored.error}")
        value = float(scored.result[self.metric.primary])
        if self.higher_is_better:
            passed = value >= self.threshold
            top = self.bounds[1] if self.bounds else 1.0
            score = clamp01(value / top) if top > 0 else float(passed)
            rel = ">=" if passed else "<"
        else:
            passed = value <= self.threshold
            score = 1.0 if passed else 0.0
            rel = "<=" if passed else ">"
        evidence: dict[str, Any] = {k: v for k, v in scored.result.items() if isinstance(v, (int, float))}
        if scored.reference_index is not None:
            evidence["reference_index"] = scored.reference_index
        reason = f"{self.metric.primary} {value:.4g} {rel} {self.threshold:g}"
        return Outcome(passed, score, value, reason, evidence)


def build_metric_check(kind: str, raw: dict[str, Any], name: str) -> tuple[MetricCheck, CommonParams]:
    """The metric of a reference assertion; its own keys are the metric's parameters."""
    from pytest_evals.metrics.reference.registry import BadParameters, build_metric, canonical_id

    common_keys = set(CommonParams.model_fields)
    common = CommonParams.model_validate({k: v for k, v in raw.items() if k in common_keys})
    params = {k: v for k, v in raw.items() if k not in common_keys}
    try:
        metric = build_metric(kind, params)
    except BadParameters as exc:
        text = str(exc)
        bad = next((k for k in params if repr(k) in text), None)
        raise AssertionProblem(bad, text) from None
    threshold = common.threshold if common.threshold is not None else DEFAULT_THRESHOLDS.get(canonical_id(kind))
    if threshold is None:
        raise AssertionProblem(
            "threshold", f"{kind} needs a threshold (the {metric.primary} a case must reach, "
            f"in the metric's own units{'' if metric.higher_is_better else ': at most'})"
        )
    return MetricCheck(name, metric, float(threshold)), common


class SimilarParams(CommonParams):
    #: Compare with this text instead of the case's references.
    value: str | None = None
    threshold: float | None = Field(default=None, ge=-1.0, le=1.0)


@dataclass
class SimilarCheck:
    name: str
    threshold: float
    value: str | None = None

    async def run(self, view: CaseView, ctx: EvalContext) -> Outcome:
        references = [self.value] if self.value is not None else view.references
        if not references:
            raise missing_reference(view, self.name)
        vectors = await ctx.embedder.aencode([view.output, *references])
        sims = [float(vectors[0] @ vectors[i + 1]) for i in range(len(references))]
        best = max(range(len(sims)), key=sims.__getitem__)
        value = sims[best]
        passed = value >= self.threshold
        reason = f"cosine {value:.3f} {'>=' if passed else '<'} {self.threshold:g}"
        return Outcome(passed, clamp01(value), value, reason,
                       {"similarities": [round(s, 6) for s in sims], "reference_index": best,
                        "model": ctx.embedder.name})


def build_similar(p: SimilarParams, name: str) -> SimilarCheck:
    return SimilarCheck(name, SIMILAR_DEFAULT if p.threshold is None else p.threshold, p.value)
