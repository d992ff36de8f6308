"""Every reference type of the HarpIA library as an assertion: the value is the
library's own (sacreBLEU and NLTK computed here directly where they are the library),
the threshold decides the verdict in the metric's units and direction."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pytest_evals.families.assertions.assertion_outcome import CaseView, Outcome
from pytest_evals.families.assertions.assertion_spec import parse_one
from pytest_evals.families.assertions.reference_checks import reference_types
from pytest_evals.metrics.reference.reference_metric import Pair
from pytest_evals.metrics.reference.registry import METRICS, build_metric

HYP = "the cat sat on the mat"
REFS = ["the cat is sitting on the mat", "a cat sat on a mat"]


class Ctx:
    """What a reference assertion reads of the evaluation context: the embedder."""

    def __init__(self) -> None:
        from pytest_evals.llm.offline_judge import get_embedder

        self.embedder = get_embedder()


def run(spec: dict[str, Any], refs: list[str] = REFS, output: str = HYP) -> Outcome:
    item = parse_one(spec, "assert[0]")
    view = CaseView(output=output, source="x.jsonl:1", references=refs)
    outcome: Outcome = asyncio.run(item.runner.run(view, Ctx()))
    return outcome


def test_every_harpia_metric_but_its_judge_is_an_assertion_type() -> None:
    assert set(reference_types()) == set(METRICS) - {"llm_judge"}


@pytest.mark.parametrize("kind", ["bleu", "sacrebleu", "chrf", "rouge", "exact_match", "edit_distance", "ter",
                                  "semantic_similarity", "bertscore"])
def test_values_are_the_librarys_and_the_threshold_decides(kind: str) -> None:
    metric = build_metric(kind)
    [scored] = metric.score_pairs([Pair(HYP, tuple(REFS))])
    value = float(scored.result[metric.primary])
    at = run({"type": kind, "threshold": value})
    assert at.value == pytest.approx(value) and at.passed
    # Just beyond the value, in the metric's own direction, the assertion fails.
    beyond = value + 1e-6 if metric.higher_is_better else value - 1e-6
    assert not run({"type": kind, "threshold": beyond}).passed


def test_sacrebleu_and_ter_equal_sacrebleu_itself() -> None:
    from sacrebleu.metrics import BLEU, TER

    assert run({"type": "sacrebleu", "threshold": 0}).value == pytest.approx(
        BLEU(effective_order=True).sentence_score(HYP, REFS).score)
    assert run({"type": "ter", "threshold": 100}).value == pytest.approx(TER().sentence_score(HYP, REFS).score)


def test_meteor_equals_nltk() -> None:
    try:
        from pytest_evals.metrics.reference.wordnet import load_wordnet

        wordnet = load_wordnet()
    except Exception:
        pytest.skip("no WordNet data (python -m nltk.downloader wordnet)")
    from nltk.translate.meteor_score import meteor_score

    from pytest_evals.metrics.reference.tokenize import tokenize

    expected = meteor_score([tokenize(r, "13a") for r in REFS], tokenize(HYP, "13a"), wordnet=wordnet)
    assert run({"type": "meteor", "threshold": 0.1}).value == pytest.approx(expected)


def test_similar_is_the_best_cosine_over_the_references() -> None:
    ctx = Ctx()
    vectors = ctx.embedder.encode([HYP, *REFS])
    best = max(float(vectors[0] @ vectors[i]) for i in (1, 2))
    got = run({"type": "similar"})
    assert got.value == pytest.approx(best, abs=1e-5) and got.passed == (best >= 0.75)
    assert run({"type": "similar", "value": "an invoice for my company", "threshold": 0.9}).passed is False
