"""The paired tests against independent computations: exact enumeration, math.comb tails."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pytest_evals.regression import paired_tests as paired
from pytest_evals.regression.paired_tests import compare_ratio, mcnemar


def _tail(k: int, n: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2), by exact integer sums."""
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n


@pytest.mark.parametrize(("worse", "better"), [(0, 0), (1, 0), (5, 0), (7, 3), (3, 7), (40, 25), (300, 260)])
def test_mcnemar_is_the_exact_one_sided_binomial_tail(worse: int, better: int) -> None:
    expected = 1.0 if worse + better == 0 else _tail(worse, worse + better)
    assert mcnemar(worse, better) == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_binary_outcomes_use_mcnemar_with_discordant_counts() -> None:
    base = np.array([1, 1, 1, 1, 0, 0, 1, 1], dtype=float)
    cur = np.array([0, 0, 0, 1, 1, 0, 1, 1], dtype=float)
    one = np.ones_like(base)
    t = compare_ratio(base, one, cur, one)
    assert t.method == "exact McNemar"
    assert (t.worse, t.better) == (3, 1)
    assert t.diff == pytest.approx(-2 / 8)
    assert t.p_value == pytest.approx(_tail(3, 4))


def test_lower_is_better_swaps_the_direction() -> None:
    base = np.array([0, 0, 0, 0, 1], dtype=float)
    cur = np.array([1, 1, 1, 0, 1], dtype=float)
    one = np.ones_like(base)
    t = compare_ratio(base, one, cur, one, lower_is_better=True)
    assert (t.worse, t.better) == (3, 0)
    assert t.p_value == pytest.approx(_tail(3, 3))


def test_randomization_p_matches_exhaustive_enumeration() -> None:
    """For 12 pairs every one of the 4,096 swap patterns can be enumerated exactly."""
    rng = np.random.default_rng(7)
    base = rng.random(12)
    cur = base - 0.15 + rng.normal(0, 0.1, 12)
    den = np.ones(12)
    observed = cur.mean() - base.mean()
    hits = 0
    for swap in itertools.product((0, 1), repeat=12):
        s = np.array(swap, dtype=bool)
        c = np.where(s, base, cur)
        b = np.where(s, cur, base)
        hits += (c.mean() - b.mean()) <= observed + 1e-12
    exact = hits / 2**12
    t = compare_ratio(base, den, cur, den, draws=20000)
    assert t.method == "paired randomization"
    assert t.p_value == pytest.approx(exact, abs=0.01)


def test_ratio_metrics_and_determinism() -> None:
    """Precision-like ratios: same inputs give the same p-value and interval every time."""
    rng = np.random.default_rng(3)
    n = 400
    tp_b = rng.integers(0, 2, n).astype(float)
    pos_b = np.maximum(tp_b, rng.integers(0, 2, n))
    tp_c = tp_b * (rng.random(n) > 0.2)
    pos_c = pos_b
    a = compare_ratio(tp_b, pos_b, tp_c, pos_c, tag="x")
    b = compare_ratio(tp_b, pos_b, tp_c, pos_c, tag="x")
    assert a == b
    assert a.diff == pytest.approx(tp_c.sum() / pos_c.sum() - tp_b.sum() / pos_b.sum())
    assert a.ci is not None and a.ci[0] <= a.diff <= a.ci[1]
    assert a.p_value is not None and a.p_value < 0.01


def test_no_difference_is_not_significant() -> None:
    rng = np.random.default_rng(11)
    x = rng.random(300)
    one = np.ones(300)
    t = compare_ratio(x, one, x.copy(), one)
    assert t.diff == 0
    assert t.p_value is not None and t.p_value > 0.5


def test_empty_and_undefined() -> None:
    empty = np.array([], dtype=float)
    t = compare_ratio(empty, empty, empty, empty)
    assert t.diff is None and t.p_value is None and t.reason
    zeros = np.zeros(3)
    t = compare_ratio(zeros, zeros, zeros, zeros)
    assert t.diff is None and "0/0" in (t.reason or "")


def test_groups_equal_numpy_unique_rows() -> None:
    rng = np.random.default_rng(5)
    rows = rng.integers(0, 3, size=(5000, 4)).astype(float)
    grouped = paired._groups(rows)
    assert grouped is not None
    values, counts = grouped
    want_values, want_counts = np.unique(rows, axis=0, return_counts=True)
    order = np.lexsort(values.T[::-1])
    assert (values[order] == want_values).all() and (counts[order] == want_counts).all()
    # Continuous scores form no groups: every case is drawn on its own.
    assert paired._groups(rng.random((5000, 2))) is None


def test_grouped_randomization_matches_exhaustive_enumeration_for_counts() -> None:
    """A precision-like ratio of counts (the grouped path: binomial swap counts per group
    of equal cases) against all 2**14 swap patterns of 14 pairs."""
    rng = np.random.default_rng(9)
    tp_b = rng.integers(0, 2, 14).astype(float)
    pos_b = np.maximum(tp_b, rng.integers(0, 2, 14))
    tp_c = tp_b * (rng.random(14) > 0.35)
    pos_c = np.maximum(tp_c, pos_b * (rng.random(14) > 0.2))
    assert paired._groups(np.stack([tp_b - tp_c, pos_b - pos_c], axis=1)) is not None
    observed = tp_c.sum() / pos_c.sum() - tp_b.sum() / pos_b.sum()
    hits = 0
    for swap in itertools.product((0, 1), repeat=14):
        s = np.array(swap, dtype=bool)
        cn, cd = np.where(s, tp_b, tp_c).sum(), np.where(s, pos_b, pos_c).sum()
        bn, bd = np.where(s, tp_c, tp_b).sum(), np.where(s, pos_c, pos_b).sum()
        d = cn / cd - bn / bd if cd and bd else 0.0
        hits += -d >= -observed - 1e-12
    exact = hits / 2**14
    t = compare_ratio(tp_b, pos_b, tp_c, pos_c, draws=20000)
    assert t.method == "paired randomization"
    assert t.p_value == pytest.approx(exact, abs=0.01)


def test_grouped_bootstrap_matches_per_case_weights() -> None:
    """Gamma weights per group of equal cases are the per-case Exponential weights summed:
    the interval agrees with a per-case Bayesian bootstrap drawn independently, with the
    extra worst-change case (a TP turned FP) for the lower limit and the best-change case
    for the upper."""
    rng = np.random.default_rng(2)
    n = 3000
    exp = rng.random(n) < 0.4
    base = exp ^ (rng.random(n) < 0.1)
    cur = base ^ (rng.random(n) < 0.03)
    tp_b, fp_b = (exp & base).astype(float), (~exp & base).astype(float)
    tp_c, fp_c = (exp & cur).astype(float), (~exp & cur).astype(float)
    grouped = paired._bootstrap_ci(tp_b, tp_b + fp_b, tp_c, tp_c + fp_c, 4000, 1)
    limits = []
    for extra, q in (((1.0, 1.0, 0.0, 1.0), 0.025), ((0.0, 1.0, 1.0, 1.0), 0.975)):
        nb, db, nc, dc = (np.append(col, x) for col, x in zip((tp_b, tp_b + fp_b, tp_c, tp_c + fp_c), extra, strict=True))
        w = np.random.default_rng(99).standard_exponential((4000, n + 1))
        d = (w @ nc) / (w @ dc) - (w @ nb) / (w @ db)
        limits.append(float(np.quantile(d, q)))
    assert grouped is not None
    assert grouped[0] == pytest.approx(limits[0], abs=0.003)
    assert grouped[1] == pytest.approx(limits[1], abs=0.003)


def test_binary_change_interval_is_tangos() -> None:
    """0/1 outcomes: the change's interval is the paired proportions' score interval,
    never a point when no case changed (the Bayesian bootstrap gave [0, 0])."""
    from pytest_evals.stats.paired_proportions import paired_proportion_ci

    base = np.array([1.0] * 29 + [0.0])
    one = np.ones_like(base)
    t = compare_ratio(base, one, base.copy(), one)
    assert t.ci == paired_proportion_ci(29, 0, 0, 1)
    assert t.ci is not None and t.ci[0] < -0.1 and t.ci[1] > 0.1
    cur = base.copy()
    cur[:3] = 0.0
    t = compare_ratio(base, one, cur, one)
    assert t.ci == paired_proportion_ci(26, 3, 0, 1)
    assert t.ci is not None and t.ci[0] < t.diff < 0 < t.ci[1] < 0.06  # type: ignore[operator]


def test_score_change_interval_is_never_a_point_and_holds_its_estimate() -> None:
    """Scores that did not change: the extra worst and best cases keep the interval open
    (about +-1/n for [0, 1] scores); an interval always holds its estimate, inside [-1, 1]."""
    rng = np.random.default_rng(4)
    scores = np.where(rng.random(30) < 0.9, 1.0, rng.random(30))
    one = np.ones(30)
    t = compare_ratio(scores, one, scores.copy(), one)
    assert t.method == "paired randomization"
    assert t.ci is not None and t.ci[0] < -0.005 and t.ci[1] > 0.005
    for trial in range(20):
        cur = np.where(rng.random(30) < 0.2, rng.random(30), scores)
        t = compare_ratio(scores, one, cur, one, tag=str(trial))
        assert t.ci is not None and -1.0 <= t.ci[0] <= t.diff <= t.ci[1] <= 1.0  # type: ignore[operator]
