"""The three verdicts of a regression gate: regression, no regression, inconclusive."""

from __future__ import annotations

import pytest

from pytest_evals.regression.drop_gates import RegressionGate, WholeRuns, judge
from pytest_evals.regression.paired_tests import PairedTest

DROP = RegressionGate("accuracy", "max_drop", 0.05)
RISE = RegressionGate("bias.mean", "max_rise", 0.05)


def paired(diff: float, ci: tuple[float, float] | None, p: float, base: float = 0.8) -> PairedTest:
    return PairedTest(base, base + diff, diff, ci, p, "paired randomization", 40)


def test_the_issues_example_is_inconclusive() -> None:
    """Change interval [-0.64, -0.07] against a 0.05 margin and p = 0.127: printed
    "no regression" before issue 25."""
    r = judge(DROP, paired(-0.35, (-0.64, -0.07), 0.127), 0.05)
    assert (r.verdict, r.status, r.passed) == ("inconclusive", "inconclusive", True)
    assert r.reason == "worse than the margin but not significant at alpha 0.05"
    failing = judge(DROP, paired(-0.35, (-0.64, -0.07), 0.127), 0.05, fail_inconclusive=True)
    assert (failing.verdict, failing.status, failing.passed) == ("inconclusive", "failed", False)
    assert failing.reason is not None and failing.reason.endswith("(--evals-fail-inconclusive)")


@pytest.mark.parametrize(("diff", "ci", "p", "verdict"), [
    (-0.10, (-0.15, -0.05), 0.001, "regression"),  # beyond the margin and significant
    (-0.06, (-0.20, 0.08), 0.01, "regression"),  # the documented rule: observed beyond, p < alpha
    (-0.04, (-0.09, 0.01), 0.04, "inconclusive"),  # significant, within the margin, interval beyond it
    (-0.01, (-0.04, 0.02), 0.30, "no regression"),  # the interval excludes drops beyond 0.05
    (0.00, (-0.05, 0.05), 0.50, "no regression"),  # exactly at the margin is not beyond it
    (0.02, (-0.08, 0.12), 0.70, "inconclusive"),  # an improvement, but too few cases to rule a drop out
    (-0.06, (-0.20, 0.08), 0.20, "inconclusive"),
])
def test_three_verdicts(diff: float, ci: tuple[float, float], p: float, verdict: str) -> None:
    r = judge(DROP, paired(diff, ci, p), 0.05)
    assert r.verdict == verdict, r.reason
    assert r.passed == (verdict != "regression")


def test_max_rise_turns_the_interval_round() -> None:
    assert judge(RISE, paired(0.10, (0.06, 0.14), 0.001), 0.05).verdict == "regression"
    assert judge(RISE, paired(-0.10, (-0.14, 0.01), 0.9), 0.05).verdict == "no regression"
    r = judge(RISE, paired(0.01, (-0.02, 0.09), 0.3), 0.05)
    assert r.verdict == "inconclusive" and "worse by 0.0900" in str(r.reason)


def test_unpaired_cases_that_move_the_metric_beyond_the_margin_make_it_inconclusive() -> None:
    paired_fine = paired(0.0, (0.0, 0.0), 1.0, base=1.0)
    assert judge(DROP, paired_fine, 0.05).verdict == "no regression"
    r = judge(DROP, paired_fine, 0.05, whole=WholeRuns(1.0, 0.5, 50, 0))
    assert r.verdict == "inconclusive"
    assert "(50 only in this run, 0 only in the baseline) the metric went 1.0000 -> 0.5000" in str(r.reason)
    assert judge(DROP, paired_fine, 0.05, whole=WholeRuns(1.0, 0.98, 1, 2)).verdict == "no regression"
    # A regression on the paired cases stays one whatever the unpaired cases do.
    assert judge(DROP, paired(-0.1, (-0.15, -0.05), 0.001), 0.05, whole=WholeRuns(0.8, 0.9, 40, 0)).verdict == "regression"


def test_skipped_and_undefined_gates_have_no_verdict() -> None:
    skipped = judge(DROP, None, 0.05, "no baseline")
    assert (skipped.status, skipped.verdict) == ("skipped", None)
    undefined = judge(DROP, PairedTest(None, None, None, None, None, "none", 0, reason="0/0"), 0.05)
    assert (undefined.status, undefined.verdict, undefined.reason) == ("failed", None, "0/0")
    assert undefined.to_json()["verdict"] is None
