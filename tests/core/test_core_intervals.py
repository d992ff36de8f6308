"""Intervals and exact tests, each checked against an independent implementation.

scipy.stats and statsmodels are the references where they implement the same method
(Clopper-Pearson, Wilson, t, McNemar, and F1's interval, which is Clopper-Pearson's for
TP / (TP + FP + FN)); where nothing does (the bounded-mean interval's dispersion, the F2
posterior, Tango's paired interval) the test computes it another way: scipy's Beta
quantiles on independently computed effective counts, a large independent Monte Carlo,
the score statistic maximised and solved numerically.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW

from pytest_evals.cli.compare_runs import compare_counts
from pytest_evals.metrics.label_metrics import binary_metrics, multiclass_metrics
from pytest_evals.model.metric_value import mean_metric
from pytest_evals.stats import intervals as stats
from pytest_evals.stats.paired_proportions import paired_proportion_ci, tango_statistic

Z = sps.norm.ppf(0.975)
ROOT = Path(__file__).resolve().parents[2]

# -- Student t ----------------------------------------------------------------------------------


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 7, 10, 29, 30, 100, 1000])
def test_t_quantile_is_scipys(df: int) -> None:
    assert stats.t_quantile(df) == pytest.approx(sps.t.ppf(0.975, df), rel=1e-12)


@pytest.mark.parametrize("n", [2, 3, 5, 40])
def test_mean_ci_matches_statsmodels(n: int) -> None:
    rng = random.Random(n)
    values = [rng.gauss(3.0, 2.0) for _ in range(n)]
    low, high = stats.mean_ci(values)  # type: ignore[misc]
    ref_low, ref_high = DescrStatsW(np.asarray(values)).tconfint_mean(alpha=0.05)
    assert (low, high) == pytest.approx((ref_low, ref_high), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 2), (1, 2), (2, 2), (7, 10), (40, 40), (3, 1000)])
def test_wilson_matches_statsmodels(k: int, n: int) -> None:
    low, high = stats.wilson(k, n)  # type: ignore[misc]
    ref = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert (low, high) == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize(
    ("k", "n"),
    [(0, 1), (1, 1), (0, 2), (1, 2), (2, 2), (7, 10), (9, 10), (40, 40), (3, 1000), (350, 35_000), (31_500, 35_000)],
)
def test_clopper_pearson_matches_statsmodels_and_scipy(k: int, n: int) -> None:
    low, high = stats.clopper_pearson(k, n)  # type: ignore[misc]
    assert (low, high) == pytest.approx(proportion_confint(k, n, alpha=0.05, method="beta"), abs=1e-12)
    exact = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert (low, high) == pytest.approx((exact.low, exact.high), abs=1e-12)


def test_clopper_pearson_fractional_counts_and_edges() -> None:
    assert stats.clopper_pearson(0, 0) is None
    # fractional counts (the bounded mean's effective sizes): the same Beta quantiles
    low, high = stats.clopper_pearson(12.3, 17.9)  # type: ignore[misc]
    assert low == pytest.approx(sps.beta.ppf(0.025, 12.3, 17.9 - 12.3 + 1), abs=1e-12)
    assert high == pytest.approx(sps.beta.ppf(0.975, 13.3, 17.9 - 12.3), abs=1e-12)
    assert stats.clopper_pearson(0, 10)[0] == 0.0  # type: ignore[index]
    assert stats.clopper_pearson(10, 10)[1] == 1.0  # type: ignore[index]


# -- mean of a bounded score ------------------------------------------------------------------


def quasi_cp_interval(values: list[float]) -> tuple[float, float]:
    """Independent computation: numpy's dispersion of the scores plus a tenth of an
    observation at 0 and at 1, and scipy's Beta quantiles at the effective counts."""
    x = np.asarray(values, dtype=float)
    n, m = len(x), float(x.mean())
    if 0 < m < 1:
        pseudo = np.asarray([0.0, 1.0])
        weights = np.concatenate([np.ones(n), [0.1, 0.1]])
        squares = float(np.sum(weights * (np.concatenate([x, pseudo]) - m) ** 2))
        phi = min(1.0, squares / (weights.sum() - 1) / (m * (1 - m)))
    else:
        phi = 1.0
    size = n / phi
    s = m * size
    low = 0.0 if s == 0 else float(sps.beta.ppf(0.025, s, size - s + 1))
    high = 1.0 if s >= size else float(sps.beta.ppf(0.975, s + 1, size - s))
    return low, high


@pytest.mark.parametrize(
    "values",
    [[0.5], [1.0], [0.0], [0.2, 0.9], [1.0, 1.0], [0.0, 1.0], [0.9, 1.0, 0.95], [0.3] * 10, [1.0] * 10],
    ids=lambda v: ",".join(f"{x:g}" for x in v),
)
def test_bounded_mean_ci_small_n_by_an_independent_computation(values: list[float]) -> None:
    low, high = stats.bounded_mean_ci(values)  # type: ignore[misc]
    assert (low, high) == pytest.approx(quasi_cp_interval(values), abs=1e-9)
    assert 0.0 <= low <= sum(values) / len(values) <= high <= 1.0


def test_bounded_mean_ci_random_samples_by_an_independent_computation() -> None:
    rng = random.Random(11)
    for n in (3, 8, 25, 200):
        for a, b in ((8, 2), (0.5, 0.5), (2, 9)):
            values = [rng.betavariate(a, b) for _ in range(n)]
            assert stats.bounded_mean_ci(values) == pytest.approx(quasi_cp_interval(values), abs=1e-9)
        judged = [1.0 if rng.random() < 0.9 else rng.random() for _ in range(n)]
        assert stats.bounded_mean_ci(judged) == pytest.approx(quasi_cp_interval(judged), abs=1e-9)


def test_bounded_mean_ci_edges() -> None:
    assert stats.bounded_mean_ci([]) is None
    # one score is not a point: the interval is wide
    low, high = stats.bounded_mean_ci([1.0])  # type: ignore[misc]
    assert high == 1.0 and low < 0.5
    low, high = stats.bounded_mean_ci([0.5])  # type: ignore[misc]
    assert high - low > 0.7
    low, high = stats.bounded_mean_ci([0.3] * 10)  # type: ignore[misc]
    assert low < 0.3 < high and high - low > 0.05  # identical scores are not certainty
    # 0/1 scores are a proportion: exactly its Clopper-Pearson interval
    for k, n in ((0, 1), (1, 2), (7, 10), (10, 10)):
        assert stats.bounded_mean_ci([1.0] * k + [0.0] * (n - k)) == pytest.approx(stats.clopper_pearson(k, n), abs=1e-12)
    # a judge's sample that missed its rare low scores is not trusted to be tight: the
    # mean 0.95 of 90% ones and 10% uniform stays inside (from the sample's own
    # dispersion, without the pseudo-observations at the bounds, the lower limit is 0.963)
    low, high = stats.bounded_mean_ci([1.0] * 29 + [0.8])  # type: ignore[misc]
    assert low < 0.95 < high <= 1.0
    # other bounds: a 1-5 rating
    low, high = stats.bounded_mean_ci([5.0, 5.0], 1.0, 5.0)  # type: ignore[misc]
    assert 1.0 <= low < 5.0 and high == 5.0
    with pytest.raises(ValueError, match=r"outside the declared bounds \[0, 1\]"):
        stats.bounded_mean_ci([0.5, 1.2])


def test_no_bounded_interval_leaves_its_bounds() -> None:
    """The issue's cases: the t interval of [0.9, 1.0, ...] passed 1, of two cases [-5.9, 6.9]."""
    rng = random.Random(2)
    for _ in range(300):
        n = rng.choice([1, 2, 3, 5, 30])
        values = [min(1.0, max(0.0, rng.choice([1.0, rng.random(), 0.97]))) for _ in range(n)]
        metric = mean_metric(values, bounds=(0.0, 1.0))
        assert metric.ci is not None and 0.0 <= metric.ci[0] <= metric.ci[1] <= 1.0
    t_ci = mean_metric([0.0, 1.0]).ci
    assert t_ci is not None and t_ci[0] < -5  # what an unbounded mean gets, for contrast


def test_bounded_mean_ci_covers_about_95_percent() -> None:
    rng = random.Random(4)
    a, b = 6.0, 1.5  # mean 0.8, skewed towards 1
    true_mean = a / (a + b)
    for n in (10, 40):
        covered = 0
        sims = 600
        for _ in range(sims):
            low, high = stats.bounded_mean_ci([rng.betavariate(a, b) for _ in range(n)])  # type: ignore[misc]
            covered += low <= true_mean <= high
        assert 0.93 <= covered / sims <= 0.995, (n, covered / sims)


# -- F-beta posterior -------------------------------------------------------------------------


def independent_f_interval(tp: int, fp: int, fn: int, beta: float, draws: int = 400_000) -> tuple[float, float]:
    """The same two posteriors by brute force, another generator and seed: the lower
    limit from Dirichlet(tp, fp + 1/2, fn + 1/2), the upper from Dirichlet(tp + 1, fp, fn),
    over all four cells (with an arbitrary TN count, which F-beta does not depend on);
    a cell of parameter 0 is 0."""
    rng = np.random.Generator(np.random.MT19937(12345))
    b2 = beta * beta

    def f_draws(cells: list[float]) -> np.ndarray:
        alpha = np.asarray([*cells, 7.5])
        p = np.zeros((draws, 4))
        p[:, alpha > 0] = rng.dirichlet(alpha[alpha > 0], size=draws)
        with np.errstate(invalid="ignore"):
            return (1 + b2) * p[:, 0] / ((1 + b2) * p[:, 0] + b2 * p[:, 2] + p[:, 1])

    lo = 0.0 if tp == 0 else float(np.quantile(f_draws([tp, fp + 0.5, fn + 0.5]), 0.025))
    hi = 1.0 if fp + fn == 0 else float(np.quantile(f_draws([tp + 1, fp, fn]), 0.975))
    return lo, hi


CONFUSIONS = [(1, 0, 0), (2, 0, 0), (1, 1, 0), (0, 1, 1), (5, 2, 1), (40, 3, 9), (300, 20, 25)]


@pytest.mark.parametrize(("tp", "fp", "fn"), CONFUSIONS)
def test_f1_interval_is_clopper_pearson_of_tp_share(tp: int, fp: int, fn: int) -> None:
    """F1 = 2J / (1 + J), J = TP / (TP + FP + FN) a binomial proportion: statsmodels'
    Clopper-Pearson interval of J, mapped to F1, exactly."""
    low, high = stats.f_beta_posterior(tp, fp, fn)  # type: ignore[misc]
    j_low, j_high = proportion_confint(tp, tp + fp + fn, alpha=0.05, method="beta")
    assert (low, high) == pytest.approx((2 * j_low / (1 + j_low), 2 * j_high / (1 + j_high)), abs=1e-12)


@pytest.mark.parametrize(("tp", "fp", "fn"), CONFUSIONS)
@pytest.mark.parametrize("beta", [1.0, 2.0])
def test_f_beta_posterior_matches_brute_force(tp: int, fp: int, fn: int, beta: float) -> None:
    low, high = stats.f_beta_posterior(tp, fp, fn, beta)  # type: ignore[misc]
    ref_low, ref_high = independent_f_interval(tp, fp, fn, beta)
    tolerance = 0.004 if beta == 1.0 else 0.012  # beta = 1 is exact; F2 uses 20,000 draws
    assert low == pytest.approx(ref_low, abs=tolerance)
    assert high == pytest.approx(ref_high, abs=tolerance)
    estimate = (1 + beta**2) * tp / ((1 + beta**2) * tp + beta**2 * fn + fp)
    assert 0.0 <= low <= estimate <= high <= 1.0


@pytest.mark.parametrize("a", [0.5, 1.0, 2.5, 10.5, 99.5, 100.5, 1000.5, 17_000.5, 34_999.5])
@pytest.mark.parametrize("b", [1.0, 2.0, 5.0, 99.0, 101.0, 1000.0, 17_000.0, 35_000.5])
def test_beta_quantile_is_scipys(a: float, b: float) -> None:
    """The hand-written Beta quantile of the F1 interval (beta.py) against scipy's."""
    from scipy.special import betainc, betaincinv

    from pytest_evals.stats.beta_quantile import beta_quantile, regularized_beta

    for q in (0.025, 0.5, 0.975):
        assert beta_quantile(a, b, q) == pytest.approx(float(betaincinv(a, b, q)), rel=1e-9, abs=1e-12)
    for x in (1e-6, 0.01, 0.3, 0.5, 0.97):
        assert regularized_beta(x, a, b) == pytest.approx(float(betainc(a, b, x)), rel=1e-9, abs=1e-12)


def test_beta_quantile_edges() -> None:
    from pytest_evals.stats.beta_quantile import beta_quantile

    assert beta_quantile(2.0, 3.0, 0.0) == 0.0 and beta_quantile(2.0, 3.0, 1.0) == 1.0
    assert beta_quantile(1.0, 1.0, 0.25) == pytest.approx(0.25, abs=1e-15)  # uniform
    for bad in ((0.0, 1.0, 0.5), (1.0, -1.0, 0.5), (1.0, 1.0, 1.5), (1.0, 1.0, math.nan)):
        with pytest.raises(ValueError):
            beta_quantile(*bad)


def test_f_beta_posterior_edges_and_determinism() -> None:
    assert stats.f_beta_posterior(0, 0, 0) is None
    for beta in (1.0, 2.0):
        one = stats.f_beta_posterior(1, 0, 0, beta)
        assert one is not None and one[0] < 0.5 and one[1] == 1.0  # n = 1 all right: wide
        assert stats.f_beta_posterior(3, 1, 2, beta) == stats.f_beta_posterior(3, 1, 2, beta)
    low, high = stats.f_beta_posterior(0, 2, 3)  # type: ignore[misc]
    assert low == 0.0 and 0 < high < 1


def test_f1_metric_is_a_score_with_an_honest_interval() -> None:
    tree = binary_metrics([(True, True)])
    for name in ("f1", "f2"):
        metric = tree[name]
        assert metric.kind == "score"  # type: ignore[union-attr]
        assert metric.value == 1.0  # type: ignore[union-attr]
        assert metric.ci is not None and metric.ci[0] < 0.5 and metric.ci[1] == 1.0  # type: ignore[union-attr]
    assert tree["accuracy"].kind == "proportion"  # type: ignore[union-attr]
    # two all-right cases: still far from certain
    ci = binary_metrics([(True, True), (False, False)])["f1"].ci  # type: ignore[union-attr]
    assert ci is not None and ci[0] < 0.5


def test_multiclass_averages_stay_wide_when_all_right() -> None:
    tree, _ = multiclass_metrics([("a", "a"), ("b", "b")])
    for name in ("macro_f1", "weighted_f1", "macro_precision"):
        metric = tree[name]
        assert metric.kind == "score" and metric.value == 1.0  # type: ignore[union-attr]
        assert metric.ci is not None and metric.ci[0] < 0.6  # type: ignore[union-attr]
    again, _ = multiclass_metrics([("a", "a"), ("b", "b")])
    assert again["macro_f1"].ci == tree["macro_f1"].ci  # type: ignore[union-attr]


def test_quick_start_router_intervals_hold_their_estimates() -> None:
    """The issue's example: the Quick start's 12-case router (5 labels) printed macro
    precision 0.893 with [0.313, 0.680], below its own estimate (the Jeffreys prior put
    12.5 pseudo-counts on 12 cases)."""
    rows = [json.loads(line) for line in (ROOT / "eval_suites" / "data" / "question_router.jsonl").read_text().splitlines()]
    tree, _ = multiclass_metrics([(str(r["expected_outcome"]), str(r["actual_outcome"])) for r in rows])
    assert tree["macro_precision"].value == pytest.approx(0.8933, abs=1e-4)  # type: ignore[union-attr]
    for name in ("macro_precision", "macro_recall", "macro_f1", "macro_f2",
                 "weighted_precision", "weighted_recall", "weighted_f1", "weighted_f2"):
        metric = tree[name]
        assert metric.ci is not None, name  # type: ignore[union-attr]
        low, high = metric.ci  # type: ignore[union-attr]
        assert 0.0 <= low < metric.value < high <= 1.0, (name, metric)  # type: ignore[union-attr]


def test_multiclass_limits_are_their_posteriors_quantiles() -> None:
    """The lower limit of a class's precision alone is Clopper-Pearson's: with one class
    predicted, macro precision is that class's precision, whose pessimistic posterior
    (one error spread over the column's off-diagonal cells) is Beta(tp, fp + 1)."""
    pairs = [("a", "a")] * 8 + [("b", "a")] * 2 + [("b", "b")] * 0
    tree, _ = multiclass_metrics(pairs)
    metric = tree["macro_precision"]  # "b" is never predicted: left out of the average
    assert metric.value == pytest.approx(0.8)  # type: ignore[union-attr]
    low, high = metric.ci  # type: ignore[union-attr, misc]
    ref_low, ref_high = proportion_confint(8, 10, alpha=0.05, method="beta")
    assert low == pytest.approx(ref_low, abs=0.02)  # 2,000 posterior draws
    assert high == pytest.approx(ref_high, abs=0.02)


# -- McNemar and the paired difference (Tango) -----------------------------------------------------------------------


@pytest.mark.parametrize(("b", "c"), [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (3, 12), (12, 3), (50, 50), (0, 40), (7860, 5140), (6500, 6500)])
def test_mcnemar_matches_scipy_and_statsmodels(b: int, c: int) -> None:
    p = stats.mcnemar_exact(b, c)
    expected = sps.binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
    assert abs(p - expected) <= 1e-12
    assert p == pytest.approx(expected, rel=1e-9)
    ref = sm_mcnemar([[10, b], [c, 10]], exact=True).pvalue
    assert p == pytest.approx(ref, rel=1e-9, abs=1e-300)


def tango_by_numerical_maximum(a: int, b: int, c: int, d: int) -> tuple[float, float]:
    """Tango's score interval, computed without the closed form: for each delta the
    multinomial likelihood of (b, c, rest) under q21 - q12 = delta is maximised
    numerically, and the limits are where the continuity-corrected statistic
    (|c - b - n delta| - 1/2) / sqrt(n (q12 + q21 - delta^2)) crosses +-z (brentq)."""
    n = a + b + c + d
    rest = n - b - c

    def statistic(delta: float) -> float:
        lo, hi = max(0.0, delta), (1 + delta) / 2

        def minus_loglik(q21: float) -> float:
            total = 0.0
            for k, p in ((b, q21 - delta), (c, q21), (rest, 1 - 2 * q21 + delta)):
                if k:
                    total -= k * math.log(max(p, 1e-300))
            return total

        if hi - lo < 1e-15:
            q21 = lo
        else:
            found = optimize.minimize_scalar(minus_loglik, bounds=(lo, hi), method="bounded",
                                             options={"xatol": 1e-14})
            # the optimum may sit on a bound (a zero count): compare with the bounds
            q21 = min((found.x, lo, hi), key=minus_loglik)
        variance = n * (2 * q21 - delta - delta * delta)
        gap = c - b - n * delta
        gap = math.copysign(max(0.0, abs(gap) - 0.5), gap)
        if variance <= 0:
            return 0.0 if gap == 0 else math.copysign(math.inf, gap)
        return gap / math.sqrt(variance)

    estimate = (c - b) / n
    eps = 1e-12
    low = -1.0 if statistic(-1 + eps) <= Z else optimize.brentq(lambda x: statistic(x) - Z, -1 + eps, estimate, xtol=1e-14)
    high = 1.0 if statistic(1 - eps) >= -Z else optimize.brentq(lambda x: statistic(x) + Z, estimate, 1 - eps, xtol=1e-14)
    return low, high


PAIRED_TABLES = [(1, 0, 0, 0), (0, 1, 0, 0), (1, 0, 0, 1), (2, 0, 0, 0), (1, 1, 0, 0), (7, 0, 0, 3), (50, 3, 12, 35),
                 (36, 12, 2, 0), (10, 5, 5, 10), (0, 10, 10, 0), (5, 0, 10, 0), (200, 15, 30, 400), (28, 2, 0, 0),
                 (0, 0, 0, 30), (900, 40, 20, 40)]


@pytest.mark.parametrize("table", PAIRED_TABLES)
def test_paired_proportion_ci_matches_a_numerical_score_interval(table: tuple[int, int, int, int]) -> None:
    low, high = paired_proportion_ci(*table)  # type: ignore[misc]
    ref_low, ref_high = tango_by_numerical_maximum(*table)
    assert low == pytest.approx(ref_low, abs=1e-7)
    assert high == pytest.approx(ref_high, abs=1e-7)
    assert -1.0 <= low <= (table[2] - table[1]) / sum(table) <= high <= 1.0


def test_paired_proportion_ci_is_never_a_point() -> None:
    """The issue's case: no case changed. The Bayesian bootstrap said [0, 0]; the score
    interval is about +-z^2/n wide (n = 30: +-0.141 with the continuity correction)."""
    low, high = paired_proportion_ci(29, 0, 0, 1)  # type: ignore[misc]
    assert low == pytest.approx(-high) and 0.10 < high < 0.16
    # the correction only widens: the uncorrected statistic is Tango's own (1998)
    plain = paired_proportion_ci(29, 0, 0, 1, continuity=0.0)
    assert plain is not None and low < plain[0] < 0 < plain[1] < high
    assert plain[1] == pytest.approx(Z * Z / (30 + Z * Z), abs=1e-9)  # b = c = 0, closed form
    assert paired_proportion_ci(0, 0, 0, 0) is None
    # the statistic decreases in delta
    values = [tango_statistic(3, 9, 40, x) for x in np.linspace(-0.99, 0.99, 50)]
    assert all(x >= y for x, y in itertools.pairwise(values))


def test_compare_counts_edges() -> None:
    empty = compare_counts(0, 0, 0, 0)
    assert empty.n == 0 and empty.ci_low is None and empty.p_value == 1.0 and empty.difference is None
    one = compare_counts(1, 0, 0, 0)
    assert one.ci_low is not None and one.ci_high is not None
    assert one.ci_low < -0.5 and one.ci_high > 0.5  # n = 1 says little
    allright = compare_counts(40, 0, 0, 0)
    assert allright.p_value == 1.0 and allright.ci_low is not None and allright.ci_low < 0 < allright.ci_high  # type: ignore[operator]
