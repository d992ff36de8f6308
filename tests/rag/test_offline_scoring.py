"""The embedding baselines' arithmetic, on given cosines (no model needed)."""

from __future__ import annotations

import pytest

from pytest_evals.families.rag.offline import (
    score_coherence,
    score_context_relevancy,
    score_factual,
    score_faithfulness,
    score_relevance,
)
from pytest_evals.families.rag.sentences import split_sentences
from pytest_evals.model.errors import JudgeError


def test_relevance_share_of_sentences_close_to_the_question() -> None:
    out = score_relevance(["a", "b", "c", "d"], [0.9, 0.25, 0.2499, -0.1], 0.25, "m")
    assert out.score == 0.5
    assert [s["verdict"] for s in out.verdicts["statements"]] == ["yes", "yes", "no", "no"]
    assert out.reason.startswith("offline embedding baseline, m: 2 of 4 answer sentences")


def test_cosines_are_rounded_before_comparison() -> None:
    # 0.24999996 rounds to 0.25: tiny float differences between batches cannot flip a verdict
    out = score_relevance(["a"], [0.24999996], 0.25)
    assert out.score == 1.0 and out.verdicts["statements"][0]["similarity"] == 0.25


def test_faithfulness_support_by_best_context_sentence() -> None:
    sims = [[0.1, 0.7], [0.59, 0.2], [0.6, 0.6]]
    out = score_faithfulness(["c1", "c2", "c3"], ["k1", "k2"], sims, 0.6)
    assert out.score == pytest.approx(2 / 3)
    claims = out.verdicts["claims"]
    assert claims[0]["closest_context"] == "k2" and claims[0]["similarity"] == 0.7
    assert claims[1]["verdict"] == "no"
    assert claims[2]["closest_context"] == "k1"  # ties go to the first sentence


def test_faithfulness_with_no_context_supports_nothing() -> None:
    out = score_faithfulness(["c1", "c2"], [], [[], []], 0.6)
    assert out.score == 0.0 and out.counts == {"yes": 0, "no": 2, "idk": 0}


def test_context_relevancy_over_needs() -> None:
    out = score_context_relevancy(["n1", "n2", "n3", "n4"], ["k"], [[0.9], [0.1], [0.5], [0.49]], 0.5,
                                  "the ideal answer's sentences")
    assert out.score == 0.5
    assert "(the ideal answer's sentences)" in out.reason


def test_coherence_mean_link_over_target_capped_at_one() -> None:
    assert score_coherence([0.2, 0.4], 0.6, "2 pairs").score == pytest.approx(0.5)
    assert score_coherence([0.9], 0.35, "1 pair").score == 1.0
    assert score_coherence([-0.3], 0.35, "1 pair").score == 0.0
    out = score_coherence([0.175], 0.35, "x")
    assert out.verdicts["rubric_equivalent"] == 3.0
    with pytest.raises(JudgeError, match="0/0"):
        score_coherence([], 0.35, "nothing")


def test_factual_precision_and_recall_match_both_ways() -> None:
    # answer sentences a0..a2 x ideal sentences i0..i1
    sims = [[0.9, 0.1], [0.2, 0.3], [0.65, 0.1]]
    p = score_factual(["a0", "a1", "a2"], ["i0", "i1"], sims, 0.6, "factual_correctness")
    r = score_factual(["a0", "a1", "a2"], ["i0", "i1"], sims, 0.6, "factual_recall")
    assert p.score == pytest.approx(2 / 3)  # a0, a2 match an ideal sentence
    assert r.score == 0.5  # i0 matched, i1 not
    assert p.verdicts["facts"] == {"TP": ["a0", "a2"], "FP": ["a1"], "FN": ["i1"], "ideal_matched": ["i0"]}


def test_factual_zero_over_zero() -> None:
    with pytest.raises(JudgeError, match="factual_recall: score undefined"):
        score_factual(["a"], [], [[]], 0.6, "factual_recall")
    with pytest.raises(JudgeError, match="factual_correctness: score undefined"):
        score_factual([], ["i"], [], 0.6, "factual_correctness")


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("It costs £88.50 to renew. Allow 3 weeks.", ["It costs £88.50 to renew.", "Allow 3 weeks."]),
        ("Yes. You can apply online. Thanks!", ["Yes. You can apply online. Thanks!"]),
        ("No.", ["No."]),
        ("", []),
        ("  * paid in November\n  * or in early December\n\n---\n",
         ["paid in November", "or in early December"]),
        ("1. Fill in the form.\n2) Post it to us.", ["Fill in the form.", "Post it to us."]),
        # a lower-case word after a full stop (abbreviations) does not start a sentence
        ("Pay £1.50 a day, e.g. by card. Or pay in cash.", ["Pay £1.50 a day, e.g. by card.", "Or pay in cash."]),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences
