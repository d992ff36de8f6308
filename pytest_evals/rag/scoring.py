"""Verdicts to scores, the way GOV.UK Chat's evaluation shapes them.

- relevance: statements not judged irrelevant / all statements;
- faithfulness: claims not contradicted by the context / all claims;
- context_relevancy: information needs not unmet ("yes" or "idk") / all needs;
- coherence: a 1-5 rubric normalised to (s - 1) / 4;
- factual_correctness: TP / (TP + FP) (precision); factual_recall: TP / (TP + FN).

A 0/0 (no statements, no claims, no facts) has no score: it raises ``JudgeError`` so the
case is reported as an error for that metric, never counted as a pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_evals.errors import JudgeError
from pytest_evals.rag.outcome import RunOutcome
from pytest_evals.rag.replies import (
    CoherenceReply,
    ContextRelevancyReply,
    FactsReply,
    FaithfulnessReply,
    RelevanceReply,
)

VERDICTS = ("yes", "no", "idk")


def ratio(numerator: int, denominator: int, *, metric: str, empty: str) -> float:
    if denominator == 0:
        raise JudgeError(f"{metric}: score undefined (0/0: {empty})")
    return numerator / denominator


def verdict_counts(verdicts: Sequence[str]) -> dict[str, int]:
    return {v: sum(1 for x in verdicts if x == v) for v in VERDICTS}


def share_not_no(verdicts: Sequence[str], *, metric: str, empty: str) -> float:
    """Share of verdicts other than "no": only a definite "no" lowers the score."""
    return ratio(sum(1 for v in verdicts if v != "no"), len(verdicts), metric=metric, empty=empty)


def relevance_score(verdicts: Sequence[str]) -> float:
    return share_not_no(verdicts, metric="relevance", empty="the judge found no statements in the answer")


def faithfulness_score(verdicts: Sequence[str]) -> float:
    return share_not_no(verdicts, metric="faithfulness", empty="the judge found no claims in the answer")


def context_relevancy_score(verdicts: Sequence[str]) -> float:
    return share_not_no(
        verdicts, metric="context_relevancy", empty="the judge listed no information needs"
    )


def coherence_score(rubric: int) -> float:
    if not 1 <= rubric <= 5:
        raise JudgeError(f"coherence: rubric score {rubric} is outside 1-5")
    return (rubric - 1) / 4


def factual_precision(tp: int, fp: int) -> float:
    return ratio(tp, tp + fp, metric="factual_correctness", empty="the answer has no key facts (TP + FP = 0)")


def factual_recall(tp: int, fn: int) -> float:
    return ratio(tp, tp + fn, metric="factual_recall", empty="the ideal answer has no key facts (TP + FN = 0)")


def _dump(items: Sequence[Any]) -> list[dict[str, Any]]:
    return [item.model_dump() for item in items]


def outcome_from_reply(metric: str, reply: Any) -> RunOutcome:
    """Score a validated judge reply (see :mod:`pytest_evals.rag.replies`)."""
    if metric == "relevance":
        assert isinstance(reply, RelevanceReply)
        verdicts = [s.verdict for s in reply.statements]
        return RunOutcome(relevance_score(verdicts), reply.reason,
                          {"statements": _dump(reply.statements)}, verdict_counts(verdicts))
    if metric == "faithfulness":
        assert isinstance(reply, FaithfulnessReply)
        verdicts = [c.verdict for c in reply.claims]
        return RunOutcome(faithfulness_score(verdicts), reply.reason,
                          {"truths": list(reply.truths), "claims": _dump(reply.claims)},
                          verdict_counts(verdicts))
    if metric == "context_relevancy":
        assert isinstance(reply, ContextRelevancyReply)
        verdicts = [n.verdict for n in reply.needs]
        return RunOutcome(context_relevancy_score(verdicts), reply.reason,
                          {"needs": _dump(reply.needs)}, verdict_counts(verdicts))
    if metric == "coherence":
        assert isinstance(reply, CoherenceReply)
        return RunOutcome(coherence_score(reply.score), reply.reason,
                          {"rubric": reply.score}, {"rubric": reply.score})
    if metric in ("factual_correctness", "factual_recall"):
        assert isinstance(reply, FactsReply)
        counts = {"TP": len(reply.tp), "FP": len(reply.fp), "FN": len(reply.fn)}
        facts = {"TP": list(reply.tp), "FP": list(reply.fp), "FN": list(reply.fn)}
        if metric == "factual_correctness":
            score = factual_precision(counts["TP"], counts["FP"])
        else:
            score = factual_recall(counts["TP"], counts["FN"])
        return RunOutcome(score, reply.reason, {"facts": facts}, counts)
    raise ValueError(f"unknown rag_answers metric {metric!r}")
