"""Intervals and exact tests, each checked against an independent implementation.

scipy.stats and statsmodels are the references where they implement the same method;
where nothing does (the bounded-mean interval, the F-beta posterior, Newcombe's paired
interval) the test computes it another way: root finding, a large independent Monte
Carlo, the paper's formulas written out.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW

from pytest_evals.cli.compare_runs import compare_counts, newcombe_phi, paired_difference_ci
from pytest_evals.metrics.label_metrics import binary_metrics, multiclass_metrics
from pytest_evals.model.metric_value import mean_metric
from pytest_evals.stats import intervals as stats

Z = sps.norm.ppf(0.975)

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


# -- mean of a bounded score ------------------------------------------------------------------


def quasi_score_interval(values: list[float]) -> tuple[float, float]:
    """Independent computation: the endpoints are the roots in mu of
    (m - mu)^2 = z^2 phi mu (1 - mu) / n, found numerically."""
    n = len(values)
    m = sum(values) / n
    var = sum((v - m) ** 2 for v in values) / n
    phi_hat = min(1.0, var / (m * (1 - m))) if 0 < m < 1 else 1.0
    phi = (n * phi_hat + 1) / (n + 1)

    def f(mu: float) -> float:
        return (m - mu) ** 2 - Z * Z * phi * mu * (1 - mu) / n

    # f(m) < 0 just inside m (the root at m itself, when m is a bound, is not an endpoint)
    low = 0.0 if m == 0 else optimize.brentq(f, 0.0, m - 1e-13) if f(0.0) > 0 else 0.0
    high = 1.0 if m == 1 else optimize.brentq(f, m + 1e-13, 1.0) if f(1.0) > 0 else 1.0
    return low, high


@pytest.mark.parametrize(
    "values",
    [[0.5], [1.0], [0.0], [0.2, 0.9], [1.0, 1.0], [0.0, 1.0], [0.9, 1.0, 0.95], [0.3] * 10, [1.0] * 10],
    ids=lambda v: ",".join(f"{x:g}" for x in v),
)
def test_bounded_mean_ci_small_n_by_root_finding(values: list[float]) -> None:
    low, high = stats.bounded_mean_ci(values)  # type: ignore[misc]
    assert (low, high) == pytest.approx(quasi_score_interval(values), abs=1e-9)
    assert 0.0 <= low <= sum(values) / len(values) <= high <= 1.0


def test_bounded_mean_ci_random_samples_by_root_finding() -> None:
    rng = random.Random(11)
    for n in (3, 8, 25, 200):
        for a, b in ((8, 2), (0.5, 0.5), (2, 9)):
            values = [rng.betavariate(a, b) for _ in range(n)]
            assert stats.bounded_mean_ci(values) == pytest.approx(quasi_score_interval(values), abs=1e-9)


def test_bounded_mean_ci_edges() -> None:
    assert stats.bounded_mean_ci([]) is None
    # one score is not a point: the interval is wide
    low, high = stats.bounded_mean_ci([1.0])  # type: ignore[misc]
    assert high == 1.0 and low < 0.5
    low, high = stats.bounded_mean_ci([0.5])  # type: ignore[misc]
    assert high - low > 0.7
    low, high = stats.bounded_mean_ci([0.3] * 10)  # type: ignore[misc]
    assert low < 0.3 < high and high - low > 0.05  # identical scores are not certainty
    # 0/1 scores are a proportion: exactly its Wilson interval
    for k, n in ((0, 1), (1, 2), (7, 10), (10, 10)):
        assert stats.bounded_mean_ci([1.0] * k + [0.0] * (n - k)) == pytest.approx(stats.wilson(k, n), abs=1e-12)
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
    """The same posterior by brute force: Dirichlet draws over all four cells (with an
    arbitrary TN count, which F-beta does not depend on), another generator and seed."""
    rng = np.random.Generator(np.random.MT19937(12345))
    p = rng.dirichlet([tp + 0.5, fp + 0.5, fn + 0.5, 7.5], size=draws)
    b2 = beta * beta
    f = (1 + b2) * p[:, 0] / ((1 + b2) * p[:, 0] + b2 * p[:, 2] + p[:, 1])
    lo, hi = np.quantile(f, [0.025, 0.975])
    return float(lo), float(hi)


@pytest.mark.parametrize(("tp", "fp", "fn"), [(1, 0, 0), (2, 0, 0), (1, 1, 0), (0, 1, 1), (5, 2, 1), (40, 3, 9), (300, 20, 25)])
@pytest.mark.parametrize("beta", [1.0, 2.0])
def test_f_beta_posterior_matches_brute_force(tp: int, fp: int, fn: int, beta: float) -> None:
    low, high = stats.f_beta_posterior(tp, fp, fn, beta)  # type: ignore[misc]
    ref_low, ref_high = independent_f_interval(tp, fp, fn, beta)
    # Boundary rule: a table with no error reaches 1, one with no TP reaches 0.
    ref_high = 1.0 if fp + fn == 0 else ref_high
    ref_low = 0.0 if tp == 0 else ref_low
    tolerance = 0.004 if beta == 1.0 else 0.012  # beta = 1 is exact; F2 uses 20,000 draws
    assert low == pytest.approx(ref_low, abs=tolerance)
    assert high == pytest.approx(ref_high, abs=tolerance)


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


# -- McNemar and Newcombe -----------------------------------------------------------------------


@pytest.mark.parametrize(("b", "c"), [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (3, 12), (12, 3), (50, 50), (0, 40), (7860, 5140), (6500, 6500)])
def test_mcnemar_matches_scipy_and_statsmodels(b: int, c: int) -> None:
    p = stats.mcnemar_exact(b, c)
    expected = sps.binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
    assert abs(p - expected) <= 1e-12
    assert p == pytest.approx(expected, rel=1e-9)
    ref = sm_mcnemar([[10, b], [c, 10]], exact=True).pvalue
    assert p == pytest.approx(ref, rel=1e-9, abs=1e-300)


def newcombe_by_the_paper(a: int, b: int, c: int, d: int) -> tuple[float, float]:
    """Newcombe (1998), method 10, for theta = p_B - p_A, written from the paper's terms:
    e, f, g, h are the margins; phi's numerator A = ad - bc is replaced by max(A - n/2, 0)
    when A > 0 (the published continuity correction)."""
    n = a + b + c + d
    e, f, g, h = a + b, c + d, a + c, b + d
    l1, u1 = proportion_confint(g, n, alpha=0.05, method="wilson")  # B's accuracy
    l2, u2 = proportion_confint(e, n, alpha=0.05, method="wilson")  # A's accuracy
    p1, p2 = g / n, e / n
    numerator = a * d - b * c
    if numerator > 0:
        numerator = max(numerator - n / 2, 0)
    phi = 0.0 if e * f * g * h == 0 else numerator / math.sqrt(e * f * g * h)
    dl = math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    du = math.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    return p1 - p2 - dl, p1 - p2 + du


@pytest.mark.parametrize(
    "table",
    [(1, 0, 0, 0), (0, 1, 0, 0), (1, 0, 0, 1), (2, 0, 0, 0), (1, 1, 0, 0), (7, 0, 0, 3), (50, 3, 12, 35),
     (36, 12, 2, 0), (10, 5, 5, 10), (0, 10, 10, 0), (5, 0, 10, 0), (200, 15, 30, 400)],
)
def test_newcombe_matches_the_paper(table: tuple[int, int, int, int]) -> None:
    low, high = paired_difference_ci(*table)  # type: ignore[misc]
    ref_low, ref_high = newcombe_by_the_paper(*table)
    assert low == pytest.approx(max(-1.0, ref_low), abs=1e-12)
    assert high == pytest.approx(min(1.0, ref_high), abs=1e-12)
    assert -1.0 <= low <= (table[2] - table[1]) / sum(table) <= high <= 1.0


def test_newcombe_correction_widens_when_ad_exceeds_bc() -> None:
    # ad - bc = 1750 - 36 > n/2: phi shrinks from the uncorrected value
    a, b, c, d = 50, 3, 12, 35
    raw = (a * d - b * c) / math.sqrt((a + b) * (c + d) * (a + c) * (b + d))
    assert 0 < newcombe_phi(a, b, c, d) < raw
    # |ad - bc| <= n/2 gives phi = 0; negative association is not corrected
    assert newcombe_phi(1, 1, 1, 2) == 0.0
    assert newcombe_phi(1, 5, 5, 1) == pytest.approx((1 - 25) / math.sqrt(6 * 6 * 6 * 6))
    assert newcombe_phi(3, 0, 0, 0) == 0.0


def test_compare_counts_edges() -> None:
    empty = compare_counts(0, 0, 0, 0)
    assert empty.n == 0 and empty.ci_low is None and empty.p_value == 1.0 and empty.difference is None
    one = compare_counts(1, 0, 0, 0)
    assert one.ci_low is not None and one.ci_high is not None
    assert one.ci_low < -0.5 and one.ci_high > 0.5  # n = 1 says little
    allright = compare_counts(40, 0, 0, 0)
    assert allright.p_value == 1.0 and allright.ci_low is not None and allright.ci_low < 0 < allright.ci_high  # type: ignore[operator]
