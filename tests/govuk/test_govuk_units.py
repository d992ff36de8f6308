"""Plain-value checks of the GOV.UK task pieces (no processes)."""

from __future__ import annotations

import asyncio

import pytest

from pytest_evals.families.classification.retrieval import RetrievalCase, chunk_scores, path_lists
from pytest_evals.families.classification.topic_tagger import TopicCase, topic_checks
from pytest_evals.families.rag.config import RagMetricSpec
from pytest_evals.families.rag.evaluate import run_metric
from pytest_evals.families.rag.offline import score_bias, score_contradictions
from pytest_evals.families.rag.outcome import RunOutcome
from pytest_evals.model.errors import JudgeError, SuiteConfigError
from pytest_evals.targets.command_adapters import OutputExpression

from .layout import RETRIEVAL, TOPIC_TAGGER


@pytest.mark.parametrize(
    ("expected", "actual", "scores"),
    [
        # Their EvaluationResult tests: P/R/F1/F2 over the union of uids.
        (["u1", "u2", "u3", "u4"], ["u1"], {"precision": 1.0, "recall": 0.25, "f1": 0.4, "f2": 0.2941}),
        (["u1", "u2"], ["u1", "u2", "u3", "u4"], {"precision": 0.5, "recall": 1.0}),
        (["u1", "u2"], ["u1", "u3", "u4"], {"f1": 0.4}),
        (["u1", "u2"], ["u1", "u3"], {"f2": 0.5}),
        (["u1", "u2"], [], {"precision": None, "recall": 0.0, "f1": 0.0}),
        ([], ["u1", "u2"], {"recall": None, "precision": 0.0}),
        ([], [], {"precision": None, "recall": None, "f1": None, "f2": None}),
    ],
)
def test_retrieval_scores_match_their_figures(expected: list[str], actual: list[str], scores: dict) -> None:
    got = chunk_scores(expected, actual)
    for name, value in scores.items():
        assert (got[name] is None) if value is None else round(got[name], 4) == value, name


def test_retrieval_path_lists() -> None:
    case = RetrievalCase.model_validate(RETRIEVAL[2])  # expected 1, 2; retrieved 1
    assert path_lists(case) == {"true_positives_exact_paths": ["/path1"], "false_positives_exact_paths": [],
                                "false_negatives_exact_paths": ["/path2"]}


def test_topic_checks_match_their_cases() -> None:
    rows = [TopicCase.model_validate(r) for r in TOPIC_TAGGER[:6]]
    checks = [topic_checks(r) for r in rows]
    assert [c["correct_primary_and_secondary"] for c in checks] == [True, False, False, False, False, False]
    assert [c["primary_matched_with_either"] for c in checks][:5] == [True, True, True, True, False]
    assert [c["matched_any_topic"] for c in checks] == [True, True, True, True, True, False]


def test_offline_bias_flags_opinion_phrasing_only() -> None:
    out = score_bias(["You can claim online.", "I think the old scheme was the best.", "Apply by May."])
    assert out.score == pytest.approx(1 / 3)
    assert "cannot judge bias itself" in out.reason
    assert score_bias(["You can claim online."]).score == 0.0


def test_offline_contradictions_catch_number_conflicts_only() -> None:
    claims = ["Claims can be backdated by up to 6 months.", "You can apply online.", "Bring a passport."]
    truths = ["Claims can be backdated by up to 3 months.", "You can apply online."]
    sim = [[0.95, 0.2], [0.1, 0.99], [0.1, 0.1]]
    out = score_contradictions(claims, truths, sim, 0.6)
    assert [c["verdict"] for c in out.verdicts["claims"]] == ["no", "yes", "idk"]
    assert out.score == pytest.approx(2 / 3)
    assert "only number conflicts" in out.reason


def test_n_runs_average_the_successful_runs_and_count_the_failed() -> None:
    spec = RagMetricSpec(name="faithfulness", threshold=0.5)

    async def runner(metric: str, s: RagMetricSpec, repeat: int) -> RunOutcome:
        if repeat == 1:
            raise JudgeError("judge reply is not a JSON object after 3 attempts")
        return RunOutcome(1.0 if repeat == 0 else 0.5, "r", {}, {})

    outcome = asyncio.run(run_metric(spec, 3, runner, "llm"))
    assert outcome.score == 0.75 and outcome.passed is True
    assert outcome.light()["failed_runs"] == 1
    assert outcome.errors[0].message.startswith("faithfulness: judge reply")


def test_bias_spec_is_lower_is_better_with_their_default_threshold() -> None:
    spec = RagMetricSpec(name="bias")
    assert spec.lower_is_better and spec.effective_threshold == 0.0


@pytest.mark.parametrize(
    ("text", "output", "value"),
    [
        ('jailbreak_guardrails_status == "fail"', {"jailbreak_guardrails_status": "fail"}, True),
        ('status == "fail" or status == "error"', {"status": "pass"}, False),
        ("metrics.router.model", {"metrics": {"router": {"model": "m"}}}, "m"),
        ('"political" in answer_guardrails_failures', {"answer_guardrails_failures": ["political"]}, True),
        ("not triggered", {"triggered": False}, True),
    ],
)
def test_output_expressions(text: str, output: dict, value: object) -> None:
    assert OutputExpression("f", text)(output) == value


@pytest.mark.parametrize("text", ["open('x')", "x + 1", "[a for a in b]", "lambda: 1"])
def test_output_expressions_reject_code(text: str) -> None:
    with pytest.raises(SuiteConfigError, match="not allowed"):
        OutputExpression("f", text)
