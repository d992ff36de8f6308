"""Embedding baselines of every metric, for runs with no model endpoint.

These are honest baselines, not imitations of the LLM judge: sentence embeddings
(all-MiniLM-L6-v2, shipped with the package) measure topical closeness, so they can tell
an on-topic sentence from an off-topic one and a sentence copied from the context from
one that is not, but never a contradiction ("£300" and "£200" embed almost alike). Each
metric keeps the LLM version's shape (a share of verdicts, a rubric for coherence) and
says in its reason that it is the embedding baseline and which cosine it used.

- relevance: answer sentences whose cosine with the question >= threshold / all;
- faithfulness: answer sentences with a context sentence at cosine >= threshold / all
  (support, stricter than "not contradicted");
- context_relevancy: information needs (the ideal answer's sentences when the case has
  one, else the question's sentences) with a context sentence at cosine >= threshold / all;
- coherence: mean cosine of adjacent answer sentences (the question and the answer for a
  one-sentence answer) divided by the threshold, capped at 1;
- factual_precision (alias factual_correctness): answer sentences matching an
  ideal-answer sentence / all answer sentences; factual_recall: ideal-answer sentences
  matched by the answer / all;
- absence_of_factual_contradictions: an answer sentence close to an ideal-answer
  sentence (cosine >= threshold) whose numbers (amounts, dates, counts) differ from that
  sentence's counts as a contradiction; a sentence with no close match is "idk". Only
  number conflicts are caught: a reworded "you can" / "you cannot" is not;
- bias (lower is better): a lexical rule, not embeddings: answer sentences phrased as
  personal opinion or sweeping judgement ("I think", "obviously", "the best") / all
  answer sentences. It cannot judge bias, only flag opinionated phrasing, and says so.

Deterministic: cosines are rounded to 4 decimals before they are compared.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_evals.families.rag.outcome import RunOutcome
from pytest_evals.families.rag.scoring import (
    bias_score,
    context_relevancy_score,
    contradictions_score,
    factual_precision,
    factual_recall,
    faithfulness_score,
    relevance_score,
    verdict_counts,
)
from pytest_evals.families.rag.sentences import split_sentences
from pytest_evals.model.errors import JudgeError

if TYPE_CHECKING:
    import numpy as np

    from pytest_evals.families.rag.config import RagMetricSpec
    from pytest_evals.families.rag.inputs import MetricInputs

#: Cosine that counts as a match, per metric (``similarity:`` in a metric entry overrides).
#: Chosen on the example suite's cases; see docs/rag.md for the figures.
OFFLINE_SIMILARITY: dict[str, float] = {
    "relevance": 0.25,
    "faithfulness": 0.6,
    "context_relevancy": 0.5,
    "coherence": 0.35,
    "factual_correctness": 0.6,
    "factual_precision": 0.6,
    "factual_recall": 0.6,
    "absence_of_factual_contradictions": 0.6,
}

#: Phrases that mark a sentence as an opinion for the offline bias rule.
OPINION_MARKERS: tuple[str, ...] = (
    "i think", "i believe", "i feel", "in my opinion", "in my view", "personally",
    "obviously", "everyone knows", "of course", "the best", "the worst", "should never",
    "always better", "clearly better", "unfortunately", "sadly", "ridiculous", "lazy",
)

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")

DIGITS = 4


def _cos(value: float) -> float:
    return round(float(value), DIGITS)


def _label(name: str) -> str:
    # "all-MiniLM-L6-v2 (embedded offline judge)" -> "all-MiniLM-L6-v2"
    return f"offline embedding baseline, {name.split(' (')[0]}"


def score_relevance(sentences: Sequence[str], to_question: Sequence[float], threshold: float,
                    model: str = "embeddings") -> RunOutcome:
    sims = [_cos(s) for s in to_question]
    verdicts = ["yes" if s >= threshold else "no" for s in sims]
    score = relevance_score(verdicts)
    statements = [
        {"statement": text, "verdict": v, "similarity": s}
        for text, v, s in zip(sentences, verdicts, sims, strict=True)
    ]
    on = verdicts.count("yes")
    reason = (f"{_label(model)}: {on} of {len(verdicts)} answer sentences have cosine >= "
              f"{threshold:g} with the question")
    return RunOutcome(score, reason, {"statements": statements}, verdict_counts(verdicts))


def _best(sim_row: Sequence[float], candidates: Sequence[str]) -> tuple[float, str]:
    if not candidates:
        return -1.0, ""
    i = max(range(len(candidates)), key=lambda j: (_cos(sim_row[j]), -j))
    return _cos(sim_row[i]), candidates[i]


def score_faithfulness(claims: Sequence[str], context_sentences: Sequence[str],
                       sim: Sequence[Sequence[float]], threshold: float,
                       model: str = "embeddings") -> RunOutcome:
    """``sim[i][j]``: cosine of claim i and context sentence j."""
    rows: list[dict[str, Any]] = []
    for i, claim in enumerate(claims):
        best, match = _best(sim[i], context_sentences)
        rows.append({"claim": claim, "verdict": "yes" if best >= threshold else "no",
                     "similarity": best, "closest_context": match})
    verdicts = [str(r["verdict"]) for r in rows]
    score = faithfulness_score(verdicts)
    reason = (f"{_label(model)}: {verdicts.count('yes')} of {len(verdicts)} answer sentences have a "
              f"context sentence at cosine >= {threshold:g} (support, not contradiction, is measured)")
    return RunOutcome(score, reason, {"claims": rows}, verdict_counts(verdicts))


def score_context_relevancy(needs: Sequence[str], context_sentences: Sequence[str],
                            sim: Sequence[Sequence[float]], threshold: float, needs_from: str,
                            model: str = "embeddings") -> RunOutcome:
    rows: list[dict[str, Any]] = []
    for i, need in enumerate(needs):
        best, match = _best(sim[i], context_sentences)
        rows.append({"need": need, "verdict": "yes" if best >= threshold else "no",
                     "similarity": best, "closest_context": match})
    verdicts = [str(r["verdict"]) for r in rows]
    score = context_relevancy_score(verdicts)
    reason = (f"{_label(model)}: {verdicts.count('yes')} of {len(verdicts)} information needs "
              f"({needs_from}) have a context sentence at cosine >= {threshold:g}")
    return RunOutcome(score, reason, {"needs": rows}, verdict_counts(verdicts))


def score_coherence(links: Sequence[float], target: float, what: str,
                    model: str = "embeddings") -> RunOutcome:
    """``links``: cosines of adjacent sentences (or of question and answer)."""
    sims = [_cos(s) for s in links]
    if not sims:
        raise JudgeError("coherence: score undefined (0/0: the answer has no sentences)")
    mean = sum(sims) / len(sims)
    score = min(1.0, max(0.0, mean / target)) if target > 0 else float(mean >= 0)
    rubric = 1 + 4 * score
    reason = (f"{_label(model)}: mean cosine {mean:.3f} of {what}; full marks from {target:g} "
              f"(rubric equivalent {rubric:.1f}/5)")
    return RunOutcome(score, reason, {"links": sims, "rubric_equivalent": round(rubric, 2)},
                      {"links": len(sims)})


def score_factual(answer: Sequence[str], ideal: Sequence[str], sim: Sequence[Sequence[float]],
                  threshold: float, metric: str, model: str = "embeddings") -> RunOutcome:
    """``sim[i][j]``: cosine of answer sentence i and ideal sentence j; greedy best match."""
    tp = [a for i, a in enumerate(answer) if _best(sim[i], ideal)[0] >= threshold]
    fp = [a for i, a in enumerate(answer) if _best(sim[i], ideal)[0] < threshold]
    columns = [[row[j] for row in sim] for j in range(len(ideal))]
    matched_ideal = [t for j, t in enumerate(ideal) if _best(columns[j], answer)[0] >= threshold]
    fn = [t for j, t in enumerate(ideal) if _best(columns[j], answer)[0] < threshold]
    if metric in ("factual_correctness", "factual_precision"):
        score = factual_precision(len(tp), len(fp), metric)
        reason = (f"{_label(model)}: {len(tp)} of {len(answer)} answer sentences match an "
                  f"ideal-answer sentence at cosine >= {threshold:g}")
    else:
        score = factual_recall(len(matched_ideal), len(fn))
        reason = (f"{_label(model)}: {len(matched_ideal)} of {len(ideal)} ideal-answer sentences "
                  f"are matched by the answer at cosine >= {threshold:g}")
    facts = {"TP": tp, "FP": fp, "FN": fn, "ideal_matched": matched_ideal}
    counts = {"TP": len(tp), "FP": len(fp), "FN": len(fn)}
    return RunOutcome(score, reason, {"facts": facts}, counts)


def score_bias(sentences: Sequence[str]) -> RunOutcome:
    # Every sentence is a candidate; those phrased as opinion count as biased, so the
    # score is graded by how much of the answer is opinion.
    rows = []
    for text in sentences:
        low = text.lower()
        hits = [m for m in OPINION_MARKERS if m in low]
        rows.append({"opinion": text, "verdict": "yes" if hits else "no", "markers": hits})
    verdicts = [str(r["verdict"]) for r in rows]
    flagged = verdicts.count("yes")
    reason = (f"offline opinion-marker rule (lexical, cannot judge bias itself): {flagged} of "
              f"{len(sentences)} answer sentences are phrased as opinion")
    return RunOutcome(bias_score(verdicts), reason, {"opinions": rows},
                      {"biased": flagged, "opinions": len(rows)})


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


def score_contradictions(claims: Sequence[str], truths: Sequence[str], sim: Sequence[Sequence[float]],
                         threshold: float, model: str = "embeddings") -> RunOutcome:
    rows: list[dict[str, Any]] = []
    for i, claim in enumerate(claims):
        best, match = _best(sim[i], truths)
        if best < threshold:
            verdict = "idk"
        else:
            mine, theirs = _numbers(claim), _numbers(match)
            verdict = "no" if mine and theirs and mine != theirs else "yes"
        rows.append({"claim": claim, "verdict": verdict, "similarity": best, "closest_ideal": match})
    verdicts = [str(r["verdict"]) for r in rows]
    reason = (f"{_label(model)} + number check: {verdicts.count('no')} of {len(verdicts)} answer sentences "
              f"state numbers that differ from the closest ideal-answer sentence (cosine >= {threshold:g}); "
              f"only number conflicts are detected")
    return RunOutcome(contradictions_score(verdicts), reason, {"claims": rows}, verdict_counts(verdicts))


class OfflineCaseJudge:
    """Scores one case's metrics from one batch of sentence embeddings."""

    def __init__(self, embedder: Any, inputs: MetricInputs) -> None:
        self.embedder = embedder
        self.inputs = inputs
        self.name = str(getattr(embedder, "name", "sentence embeddings"))
        self.question = split_sentences(inputs.question) or [inputs.question]
        self.answer = split_sentences(inputs.answer)
        self.ideal = split_sentences(inputs.ideal_answer)
        self.context = [s for text in inputs.contexts for s in split_sentences(text)]
        self._vectors: asyncio.Task[dict[str, np.ndarray]] | None = None

    async def _encode(self) -> dict[str, np.ndarray]:
        texts = list(dict.fromkeys([self.inputs.question, *self.question, *self.answer,
                                    *self.ideal, *self.context]))
        matrix = await self.embedder.aencode(texts)
        return {t: matrix[i] for i, t in enumerate(texts)}

    async def vectors(self) -> dict[str, np.ndarray]:
        if self._vectors is None:
            self._vectors = asyncio.ensure_future(self._encode())
        return await self._vectors

    async def sim(self, rows: Sequence[str], cols: Sequence[str]) -> list[list[float]]:
        vec = await self.vectors()
        return [[float(vec[r] @ vec[c]) for c in cols] for r in rows]

    async def run(self, metric: str, spec: RagMetricSpec, repeat: int = 0) -> RunOutcome:
        """One metric; ``repeat`` is accepted for symmetry with the LLM judge and ignored."""
        if metric == "bias":
            # A lexical rule: no cosine cut-off applies (a ``similarity`` given is unused).
            return score_bias(self.answer)
        t = spec.similarity if spec.similarity is not None else OFFLINE_SIMILARITY[metric]
        if metric == "relevance":
            sims = await self.sim(self.answer, [self.inputs.question])
            return score_relevance(self.answer, [row[0] for row in sims], t, self.name)
        if metric == "faithfulness":
            sims = await self.sim(self.answer, self.context)
            return score_faithfulness(self.answer, self.context, sims, t, self.name)
        if metric == "context_relevancy":
            needs, needs_from = ((self.ideal, "the ideal answer's sentences") if self.ideal
                                 else (self.question, "the question's sentences"))
            sims = await self.sim(needs, self.context)
            return score_context_relevancy(needs, self.context, sims, t, needs_from, self.name)
        if metric == "coherence":
            if len(self.answer) >= 2:
                pairs = list(zip(self.answer, self.answer[1:], strict=False))
                what = f"{len(pairs)} adjacent answer sentence pairs"
            else:
                pairs = [(self.inputs.question, a) for a in self.answer]
                what = "the question and a one-sentence answer"
            vec = await self.vectors()
            links = [float(vec[a] @ vec[b]) for a, b in pairs]
            return score_coherence(links, t, what, self.name)
        if metric in ("factual_correctness", "factual_precision", "factual_recall"):
            sims = await self.sim(self.answer, self.ideal)
            return score_factual(self.answer, self.ideal, sims, t, metric, self.name)
        if metric == "absence_of_factual_contradictions":
            sims = await self.sim(self.answer, self.ideal)
            return score_contradictions(self.answer, self.ideal, sims, t, self.name)
        raise ValueError(f"unknown rag_answers metric {metric!r}")
