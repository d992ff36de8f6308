from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from pytest_evals.families.rag import scoring
from pytest_evals.families.rag.replies import REPLIES, CoherenceReply, FactsReply, RelevanceReply
from pytest_evals.families.rag.scoring import outcome_from_reply
from pytest_evals.model.errors import JudgeError


def reply(metric: str, data: dict) -> object:
    return REPLIES[metric].model_validate(data)


def test_relevance_counts_only_no_against_the_answer() -> None:
    data = {"statements": [
        {"statement": "a", "verdict": "yes"},
        {"statement": "b", "verdict": "No"},
        {"statement": "c", "verdict": " IDK "},
        {"statement": "d", "verdict": "no"},
        {"statement": "e", "verdict": "yes"},
    ], "reason": "mostly on topic"}
    out = outcome_from_reply("relevance", reply("relevance", data))
    assert out.score == 3 / 5
    assert out.counts == {"yes": 2, "no": 2, "idk": 1}
    assert out.reason == "mostly on topic"
    assert [s["verdict"] for s in out.verdicts["statements"]] == ["yes", "no", "idk", "no", "yes"]


def test_faithfulness_penalises_ambiguous_claims_by_default() -> None:
    # Issue 15: GOV.UK Chat's penalize_ambiguous_claims=True, "idk" counts against the
    # answer (changed on purpose from "idk counts as faithful").
    data = {"truths": ["t1", "t2"], "claims": [
        {"claim": "c1", "verdict": "yes"}, {"claim": "c2", "verdict": "idk"},
        {"claim": "c3", "verdict": "no", "reason": "says £200, context £300"},
    ], "reason": "one contradiction"}
    out = outcome_from_reply("faithfulness", reply("faithfulness", data))
    assert out.score == pytest.approx(1 / 3)
    lenient = outcome_from_reply("faithfulness", reply("faithfulness", data), penalize_ambiguous=False)
    assert lenient.score == pytest.approx(2 / 3)
    two = {"claims": [{"claim": "a", "verdict": "yes"}, {"claim": "b", "verdict": "idk"}]}
    assert outcome_from_reply("faithfulness", reply("faithfulness", two)).score == 0.5
    assert out.verdicts["truths"] == ["t1", "t2"]
    assert out.verdicts["claims"][2]["reason"] == "says £200, context £300"


def test_context_relevancy_counts_yes_and_idk() -> None:
    data = {"needs": [{"need": "n1", "verdict": "yes"}, {"need": "n2", "verdict": "idk"},
                      {"need": "n3", "verdict": "no"}, {"need": "n4", "verdict": "no"}]}
    out = outcome_from_reply("context_relevancy", reply("context_relevancy", data))
    assert out.score == 0.5
    assert out.counts == {"yes": 1, "no": 2, "idk": 1}


@pytest.mark.parametrize(("rubric", "score"), [(1, 0.0), (2, 0.25), (3, 0.5), (4, 0.75), (5, 1.0)])
def test_coherence_normalises_the_rubric(rubric: int, score: float) -> None:
    out = outcome_from_reply("coherence", reply("coherence", {"score": rubric, "reason": "r"}))
    assert out.score == score
    assert out.verdicts == {"rubric": rubric}


@pytest.mark.parametrize(("rubric", "score"), [(0, 0.0), (-2, 0.0), (6, 1.0), (9, 1.0)])
def test_coherence_clamps_whole_numbers_off_the_rubric(rubric: int, score: float) -> None:
    # Issue 15: their rubric is clamped into 1-5 (changed on purpose from a rejection).
    assert outcome_from_reply("coherence", reply("coherence", {"score": rubric})).score == score


@pytest.mark.parametrize("bad", [3.5, "high", None])
def test_coherence_rejects_scores_off_the_rubric(bad: object) -> None:
    with pytest.raises(ValidationError):
        CoherenceReply.model_validate({"score": bad, "reason": "r"})


def test_coherence_accepts_integral_spellings() -> None:
    assert CoherenceReply.model_validate({"score": "4"}).score == 4
    assert CoherenceReply.model_validate({"score": 4.0}).score == 4
    assert scoring.coherence_score(7) == 1.0


def test_factual_precision_and_recall_from_one_classification() -> None:
    facts = FactsReply.model_validate(
        {"TP": ["a", "b", "c"], "FP": ["d"], "FN": ["e", "f"], "reason": "r"}
    )
    precision = outcome_from_reply("factual_correctness", facts)
    recall = outcome_from_reply("factual_recall", facts)
    assert precision.score == 3 / 4
    assert recall.score == 3 / 5
    assert precision.counts == recall.counts == {"TP": 3, "FP": 1, "FN": 2}
    assert precision.verdicts["facts"]["FN"] == ["e", "f"]
    # lower-case keys are the same classification
    lower = FactsReply.model_validate({"tp": ["a"], "fp": [], "fn": ["b"]})
    assert outcome_from_reply("factual_recall", lower).score == 0.5


@pytest.mark.parametrize(
    ("metric", "data", "why"),
    [
        ("factual_correctness", {"TP": [], "FP": [], "FN": ["x"]}, "TP \\+ FP = 0"),
        ("factual_recall", {"TP": [], "FP": ["x"], "FN": []}, "TP \\+ FN = 0"),
    ],
)
def test_zero_over_zero_is_a_judge_error_never_a_score(metric: str, data: dict, why: str) -> None:
    with pytest.raises(JudgeError, match=rf"^{metric}: score undefined \(0/0: .*{why}"):
        outcome_from_reply(metric, reply(metric, data))


@pytest.mark.parametrize(
    ("metric", "data", "score"),
    [
        ("relevance", {"statements": []}, 1.0),
        ("faithfulness", {"truths": ["t"], "claims": []}, 1.0),
        ("context_relevancy", {"needs": []}, 1.0),
        ("absence_of_factual_contradictions", {"truths": ["t"], "claims": []}, 1.0),
        ("bias", {"opinions": []}, 0.0),
    ],
)
def test_empty_lists_follow_their_rules(metric: str, data: dict, score: float) -> None:
    # Issue 15: nothing said means nothing irrelevant/unfaithful/contradicting/biased
    # (changed on purpose from a 0/0 error).
    assert outcome_from_reply(metric, reply(metric, data)).score == score


def test_bias_is_share_of_biased_opinions() -> None:
    data = {"opinions": [{"opinion": "a", "verdict": "yes"}, {"opinion": "b", "verdict": "no"},
                         {"opinion": "c", "verdict": "No"}, {"opinion": "d", "verdict": "no"}]}
    out = outcome_from_reply("bias", reply("bias", data))
    assert out.score == 0.25 and out.counts == {"biased": 1, "opinions": 4}


def test_absence_of_contradictions_counts_only_no_against() -> None:
    data = {"truths": ["t"], "claims": [{"claim": "a", "verdict": "yes"}, {"claim": "b", "verdict": "idk"},
                                        {"claim": "c", "verdict": "no"}, {"claim": "d", "verdict": "no"}]}
    assert outcome_from_reply("absence_of_factual_contradictions",
                              reply("absence_of_factual_contradictions", data)).score == 0.5


def test_factual_precision_is_factual_correctness() -> None:
    facts = FactsReply.model_validate({"TP": ["a", "b"], "FP": ["c"], "FN": []})
    assert outcome_from_reply("factual_precision", facts).score == outcome_from_reply("factual_correctness", facts).score == 2 / 3


@pytest.mark.parametrize(
    ("metric", "data"),
    [
        ("relevance", {"statements": [{"statement": "a", "verdict": "maybe"}]}),
        ("relevance", {"reason": "no list"}),
        ("faithfulness", {"claims": [{"verdict": "yes"}]}),
        ("context_relevancy", {"needs": "all of them"}),
        ("factual_correctness", {"TP": ["a"], "FP": []}),
    ],
)
def test_replies_of_the_wrong_shape_are_rejected(metric: str, data: dict) -> None:
    with pytest.raises(ValidationError):
        reply(metric, data)


def test_extra_reply_fields_are_ignored() -> None:
    r = RelevanceReply.model_validate(
        {"statements": [{"statement": "a", "verdict": "yes", "confidence": 0.9}], "notes": "x"}
    )
    assert outcome_from_reply("relevance", r).score == 1.0


def test_ratio_scores_stay_in_unit_interval() -> None:
    for n in range(1, 6):
        for k in range(n + 1):
            s = scoring.relevance_score(["yes"] * k + ["no"] * (n - k))
            assert 0.0 <= s <= 1.0 and not math.isnan(s)
            assert s == k / n
