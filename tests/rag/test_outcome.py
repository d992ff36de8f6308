from __future__ import annotations

import pytest

from pytest_evals.families.rag.messages import case_message
from pytest_evals.families.rag.outcome import MetricOutcome, RunError, RunOutcome


def run(score: float, reason: str = "") -> RunOutcome:
    return RunOutcome(score, reason, {}, {})


def test_mean_and_sample_std_over_runs() -> None:
    o = MetricOutcome("relevance", 0.8, runs=[run(1.0), run(0.5), run(0.75)])
    assert o.score == pytest.approx(0.75)
    assert o.std == pytest.approx(0.25)  # sample std of 1.0, 0.5, 0.75
    assert o.passed is False
    assert o.light() == {"score": pytest.approx(0.75), "std": pytest.approx(0.25), "runs": [1.0, 0.5, 0.75],
                         "threshold": 0.8, "passed": False, "error": None, "failed_runs": 0,
                         "lower_is_better": False, "combine": "mean", "mean_passed": False,
                         "runs_passed": 1, "majority_passed": False}


def test_majority_of_runs_decides_when_asked() -> None:
    # mean 0.6 < 0.7, yet 2 of 3 runs reach it: majority passes, the mean does not
    runs = [run(0.9), run(0.9), run(0.0)]
    mean = MetricOutcome("relevance", 0.7, runs=list(runs))
    majority = MetricOutcome("relevance", 0.7, runs=list(runs), combine="majority")
    assert mean.passed is False and majority.passed is True
    assert majority.light()["mean_passed"] is False and majority.light()["majority_passed"] is True
    assert majority.light()["runs_passed"] == 2
    # a tie is not a majority; lower-is-better runs count at or below the threshold
    tie = MetricOutcome("relevance", 0.7, runs=[run(0.9), run(0.1)], combine="majority")
    assert tie.passed is False
    bias = MetricOutcome("bias", 0.0, runs=[run(0.0), run(0.0), run(0.5)], lower_is_better=True,
                         combine="majority")
    assert bias.passed is True and bias.mean_passed is False
    assert "[majority: 2 of 3 runs pass]" not in (case_message([bias]) or "")
    assert "[majority: 2 of 3 runs pass]" in (case_message([majority, mean]) or "")


def test_single_run_has_no_std() -> None:
    o = MetricOutcome("coherence", 0.8, runs=[run(0.75)])
    assert o.std is None and o.score == 0.75 and o.passed is False


def test_threshold_met_despite_float_noise() -> None:
    # (0.7 + 0.8 + 0.9) / 3 is 0.7999999999999999 in floating point
    o = MetricOutcome("relevance", 0.8, runs=[run(0.7), run(0.8), run(0.9)])
    assert o.score != 0.8 and o.passed is True


def test_failed_runs_are_counted_and_the_others_averaged() -> None:
    # Issue 15: GOV.UK Chat averages the runs that succeeded (changed on purpose from
    # "any failed run makes the metric unscored"); the failed run stays visible.
    o = MetricOutcome("faithfulness", 1.0, runs=[run(1.0), run(0.5)],
                      errors=[RunError(2, "judge", "faithfulness: judge reply field 'claims': missing")])
    assert not o.failed and o.score == 0.75 and o.passed is False
    assert o.light()["failed_runs"] == 1 and o.light()["error"] is None
    assert o.light()["runs"] == [1.0, 0.5]
    line = case_message([o])
    assert line is not None and "1 run(s) failed" in line and "'claims'" in line


def test_all_runs_failed_makes_the_metric_unscored() -> None:
    o = MetricOutcome("faithfulness", 1.0, runs=[],
                      errors=[RunError(0, "judge", "faithfulness: bad reply"), RunError(1, "judge", "faithfulness: bad")])
    assert o.failed and o.score is None and o.passed is None and o.std is None
    assert o.light()["error"] == "judge" and o.light()["failed_runs"] == 2
    assert "2 runs failed" in o.error_message()


def test_bias_passes_at_or_below_its_threshold() -> None:
    assert MetricOutcome("bias", 0.0, runs=[run(0.0)], lower_is_better=True).passed is True
    worse = MetricOutcome("bias", 0.0, runs=[run(0.5), run(0.0)], lower_is_better=True)
    assert worse.passed is False and worse.reason == ""
    msg = case_message([worse])
    assert msg is not None and "bias: 0.25 > threshold 0.00" in msg


def test_reason_comes_from_the_lowest_run() -> None:
    o = MetricOutcome("relevance", 0.5, runs=[run(1.0, "fine"), run(0.25, "off topic"), run(0.5, "meh")])
    assert o.reason == "off topic"


def test_message_lists_every_metric_with_score_threshold_and_reason() -> None:
    outcomes = [
        MetricOutcome("relevance", 0.8, runs=[run(0.9, "on topic")]),
        MetricOutcome("faithfulness", 1.0, runs=[run(0.5, "claims £200; the page says £300")]),
        MetricOutcome("coherence", 0.8, runs=[run(0.5, "jumbled"), run(1.0, "ok")]),
    ]
    msg = case_message(outcomes)
    assert msg is not None
    lines = msg.splitlines()
    assert lines[0] == "2 of 3 metric(s) below threshold: faithfulness, coherence"
    assert lines[1] == "  FAIL faithfulness: 0.50 < threshold 1.00 - judge: claims £200; the page says £300"
    assert lines[2] == ("  FAIL coherence: 0.75 < threshold 0.80 (mean of 2 runs, std 0.35) - judge: jumbled")
    assert lines[3] == "  ok   relevance: 0.90 >= threshold 0.80 - judge: on topic"


def test_no_message_when_everything_passes() -> None:
    assert case_message([MetricOutcome("relevance", 0.8, runs=[run(0.8)])]) is None


def test_message_for_an_unscored_metric_names_it_first() -> None:
    outcomes = [
        MetricOutcome("relevance", 0.8, runs=[run(1.0, "fine")]),
        MetricOutcome("faithfulness", 1.0, errors=[RunError(0, "judge", "faithfulness: score undefined (0/0: no claims)")]),
    ]
    msg = case_message(outcomes)
    assert msg is not None
    head, first, second = msg.splitlines()
    assert head == "1 metric(s) could not be scored: faithfulness"
    assert first == "  ERROR faithfulness: score undefined (0/0: no claims)"
    assert second.startswith("  ok   relevance: 1.00")


def test_long_reasons_are_cut_in_the_message() -> None:
    msg = case_message([MetricOutcome("relevance", 0.8, runs=[run(0.1, "x" * 2000)])])
    assert msg is not None and len(msg) < 600 and msg.endswith("…")
