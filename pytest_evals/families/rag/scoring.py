"""Verdicts to scores, the way GOV.UK Chat's evaluation shapes them.

- relevance: statements not judged irrelevant / all statements;
- faithfulness: supported claims ("yes") / all claims, their default
  (``penalize_ambiguous_claims``); with the penalty off, claims not contradicted / all;
- context_relevancy: information needs not unmet ("yes" or "idk") / all needs;
- coherence: a 1-5 rubric, clamped into range, normalised to (s - 1) / 4;
- factual_precision (alias factual_correctness): TP / (TP + FP); factual_recall:
  TP / (TP + FN);
- absence_of_factual_contradictions: claims not contradicting the ideal answer / all;
- bias (lower is better): biased opinions / all opinions.

Empty lists follow their rules: no statements, claims or needs score 1.0 (nothing
irrelevant, unfaithful or contradicting was said), no opinions scores 0.0 bias. A 0/0 in
the factual metrics (no key facts at all) still has no score: it raises ``JudgeError``
so the run is reported as failed, never counted as a pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_evals.families.rag.outcome import RunOutcome
from pytest_evals.families.rag.replies import (
    BiasReply,
    CoherenceReply,
    ContextRelevancyReply,
    ContradictionsReply,
    FactsReply,
    FaithfulnessReply,
    RelevanceReply,
)
from pytest_evals.model.errors import JudgeError

#: The names of the precision metric (factual_correctness is its older name).
FACTUAL_PRECISION = ("factual_precision", "factual_correctness")

VERDICTS = ("yes", "no", "idk")


def ratio(numerator: int, denominator: int, *, metric: str, empty: str) -> float:
    if denominator == 0:
        raise JudgeError(f"{metric}: score undefined (0/0: {empty})")
    return numerator / denominator


def verdict_counts(verdicts: Sequence[str]) -> dict[str, int]:
    return {v: sum(1 for x in verdicts if x == v) for v in VERDICTS}


def share_not_no(verdicts: Sequence[str], *, empty_score: float = 1.0) -> float:
    """Share of verdicts other than "no": only a definite "no" lowers the score."""
    if not verdicts:
        return empty_score
    return sum(1 for v in verdicts if v != "no") / len(verdicts)


def share_yes(verdicts: Sequence[str], *, empty_score: float) -> float:
    if not verdicts:
        return empty_score
    return sum(1 for v in verdicts if v == "yes") / len(verdicts)


def relevance_score(verdicts: Sequence[str]) -> float:
    return share_not_no(verdicts)


def faithfulness_score(verdicts: Sequence[str], penalize_ambiguous: bool = True) -> float:
    """With the penalty (their default) an "idk" counts against the answer: yes / all."""
    if penalize_ambiguous:
        return share_yes(verdicts, empty_score=1.0)
    return share_not_no(verdicts)


def context_relevancy_score(verdicts: Sequence[str]) -> float:
    return share_not_no(verdicts)


def contradictions_score(verdicts: Sequence[str]) -> float:
    """Absence of factual contradictions: claims not contradicting the ideal answer / all."""
    return share_not_no(verdicts)


def bias_score(verdicts: Sequence[str]) -> float:
    """Biased opinions / all opinions (lower is better); no opinions is no bias."""
    return share_yes(verdicts, empty_score=0.0)


def coherence_score(rubric: int) -> float:
    clamped = min(5, max(1, rubric))
    return (clamped - 1) / 4


def factual_precision(tp: int, fp: int, metric: str = "factual_precision") -> float:
    return ratio(tp, tp + fp, metric=metric, empty="the answer has no key facts (TP + FP = 0)")


def factual_recall(tp: int, fn: int) -> float:
    return ratio(tp, tp + fn, metric="factual_recall", empty="the ideal answer has no key facts (TP + FN = 0)")


def _dump(items: Sequence[Any]) -> list[dict[str, Any]]:
    return [item.model_dump() for item in items]


def outcome_from_reply(metric: str, reply: Any, penalize_ambiguous: bool = True) -> RunOutcome:
    """Score a validated judge reply (see :mod:`pytest_evals.families.rag.replies`)."""
    if metric == "relevance":
        assert isinstance(reply, RelevanceReply)
        verdicts = [s.verdict for s in reply.statements]
        return RunOutcome(relevance_score(verdicts), reply.reason,
                          {"statements": _dump(reply.statements)}, verdict_counts(verdicts))
    if metric == "faithfulness":
        assert isinstance(reply, FaithfulnessReply)
        verdicts = [c.verdict for c in reply.claims]
        counts = {**verdict_counts(verdicts), "penalize_ambiguous_claims": int(penalize_ambiguous)}
        return RunOutcome(faithfulness_score(verdicts, penalize_ambiguous), reply.reason,
                          {"truths": list(reply.truths), "claims": _dump(reply.claims)}, counts)
    if metric == "context_relevancy":
        assert isinstance(reply, ContextRelevancyReply)
        verdicts = [n.verdict for n in reply.needs]
        return RunOutcome(context_relevancy_score(verdicts), reply.reason,
                          {"needs": _dump(reply.needs)}, verdict_counts(verdicts))
    if metric == "coherence":
        assert isinstance(reply, CoherenceReply)
        return RunOutcome(coherence_score(reply.score), reply.reason,
                          {"rubric": reply.score}, {"rubric": reply.score})
    if metric == "absence_of_factual_contradictions":
        assert isinstance(reply, ContradictionsReply)
        verdicts = [c.verdict for c in reply.claims]
        return RunOutcome(contradictions_score(verdicts), reply.reason,
                          {"truths": list(reply.truths), "claims": _dump(reply.claims)}, verdict_counts(verdicts))
    if metric == "bias":
        assert isinstance(reply, BiasReply)
        verdicts = [o.verdict for o in reply.opinions]
        return RunOutcome(bias_score(verdicts), reply.reason, {"opinions": _dump(reply.opinions)},
                          {"biased": verdicts.count("yes"), "opinions": len(verdicts)})
    if metric in (*FACTUAL_PRECISION, "factual_recall"):
        assert isinstance(reply, FactsReply)
        counts = {"TP": len(reply.tp), "FP": len(reply.fp), "FN": len(reply.fn)}
        facts = {"TP": list(reply.tp), "FP": list(reply.fp), "FN": list(reply.fn)}
        if metric in FACTUAL_PRECISION:
            score = factual_precision(counts["TP"], counts["FP"], metric)
        else:
            score = factual_recall(counts["TP"], counts["FN"])
        return RunOutcome(score, reply.reason, {"facts": facts}, counts)
    raise ValueError(f"unknown rag_answers metric {metric!r}")
