"""Confidence intervals and tests, deterministic so xdist and plain runs agree exactly.

Quantiles and exact tests come from scipy's special functions (``scipy.special``, the
routines ``scipy.stats`` itself calls), imported inside the functions that need them:
importing ``scipy.stats`` costs seconds on a loaded machine, ``scipy.special`` a fifth.
The one exception is the Beta quantile of the F1 interval, which every classification
and HaluEval run needs (:mod:`pytest_evals.stats.beta_quantile`, checked against scipy to 1e-12).
What each interval is, and why it was chosen, is in docs/core.md ("Intervals").
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from statistics import NormalDist

Z95 = NormalDist().inv_cdf(0.975)

#: Monte Carlo draws of a posterior; the seed comes from the counts, so the interval
#: is a function of the counts alone (same on one process or under xdist).
POSTERIOR_DRAWS = 20_000

#: Jeffreys prior: half a pseudo-count in every cell of a multinomial.
JEFFREYS = 0.5


def wilson(successes: float, total: float, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for a proportion; None for 0/0.

    ``total`` may be fractional (an effective sample size, see :func:`bounded_mean_ci`).
    """
    if total <= 0:
        return None
    p = successes / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(max(0.0, p * (1 - p)) / total + z * z / (4 * total * total)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def t_quantile(df: int, level: float = 0.95) -> float:
    """Two-sided Student t critical value, exact (scipy)."""
    if df <= 0:
        return math.inf
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + level / 2))


def mean_ci(values: Sequence[float]) -> tuple[float, float] | None:
    """Student-t interval for the mean of an unbounded score; None with fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    m = math.fsum(values) / n
    var = math.fsum((v - m) ** 2 for v in values) / (n - 1)
    half = t_quantile(n - 1) * math.sqrt(var / n)
    return m - half, m + half


def bounded_mean_ci(values: Sequence[float], low: float = 0.0, high: float = 1.0) -> tuple[float, float] | None:
    """95% interval for the mean of a score bounded in [low, high]; None for no values.

    A quasi-binomial score (Wilson) interval: rescaled to [0, 1], a bounded variable's
    variance is at most m(1 - m), so the scores are treated as a proportion with
    dispersion phi = var / (m(1 - m)) <= 1, i.e. the Wilson interval at the effective
    size n / phi. 0/1 scores (and scores all at one bound) give exactly the Wilson
    interval of the proportion. phi is shrunk towards 1 by one pseudo-observation, so one
    score, or n identical scores, give a wide interval rather than a point. The interval
    never leaves [low, high].
    """
    n = len(values)
    if n == 0:
        return None
    if not high > low:
        raise ValueError(f"bounds [{low}, {high}] are empty")
    span = high - low
    # Rounding may put a score a hair past its bound (a cosine of 1.0000001): clamp that;
    # anything further out is a scorer bug, reported rather than hidden.
    slack = 1e-6 * span
    outside = [v for v in values if not low - slack <= v <= high + slack or math.isnan(v)]
    if outside:
        raise ValueError(f"score {outside[0]!r} lies outside the declared bounds [{low:g}, {high:g}]")
    scaled = [min(1.0, max(0.0, (v - low) / span)) for v in values]
    m = math.fsum(scaled) / n
    spread = m * (1 - m)
    var = math.fsum((x - m) ** 2 for x in scaled) / n
    # Every score at the same bound (m(1 - m) = 0) is what 0/1 scores would show too:
    # nothing says the dispersion is below a proportion's, so no narrowing.
    phi_hat = min(1.0, var / spread) if spread > 0 else 1.0
    phi = (n * phi_hat + 1) / (n + 1)
    n_eff = n / phi
    ci = wilson(m * n_eff, n_eff)
    assert ci is not None
    return low + span * ci[0], low + span * ci[1]


def std(values: Sequence[float], ddof: int = 0) -> float | None:
    n = len(values)
    if n - ddof <= 0:
        return None
    m = sum(values) / n
    return math.sqrt(sum((v - m) ** 2 for v in values) / (n - ddof))


def median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def counts_seed(counts: Sequence[int], salt: str = "") -> int:
    """A seed that depends only on the counts (and a label), stable across processes."""
    text = ",".join(str(int(c)) for c in counts) + "|" + salt
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def dirichlet_draws(counts: Sequence[int], draws: int = 2000, salt: str = "") -> list[list[float]]:
    """Draws of cell probabilities from the Jeffreys Dirichlet posterior of ``counts``
    (every count + 1/2), seeded from the counts."""
    import numpy as np

    rng = np.random.default_rng(counts_seed(counts, salt))
    alpha = np.asarray(counts, dtype=float) + JEFFREYS
    return [row.tolist() for row in rng.dirichlet(alpha, size=draws)]


def credible_interval(values: Sequence[float | None], draws: int) -> tuple[float, float] | None:
    """Equal-tailed 95% interval of posterior draws of a statistic; None when the
    statistic is undefined on most draws."""
    import numpy as np

    kept = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if kept.size < draws // 2:
        return None
    lo, hi = np.quantile(kept, [0.025, 0.975])
    return float(lo), float(hi)


def f_beta_posterior(tp: int, fp: int, fn: int, beta: float = 1.0) -> tuple[float, float] | None:
    """95% credible interval of F-beta under a Jeffreys Dirichlet posterior of the counts.

    F-beta depends on the TP/FP/FN cell probabilities only, whose normalised posterior
    is Dirichlet(tp + 1/2, fp + 1/2, fn + 1/2). For F1 = 2u / (1 + u) with
    u = p_tp / (p_tp + p_fp + p_fn) ~ Beta(tp + 1/2, fp + fn + 1) the quantiles are exact;
    other betas use :data:`POSTERIOR_DRAWS` draws seeded from the counts. None when there
    is nothing to score (tp = fp = fn = 0).
    """
    if tp + fp + fn <= 0:
        return None
    if beta == 1.0:
        from pytest_evals.stats.beta_quantile import beta_quantile  # not scipy: see beta.py

        a, b = tp + JEFFREYS, fp + fn + 2 * JEFFREYS
        u_lo, u_hi = (beta_quantile(a, b, q) for q in (0.025, 0.975))
        lo, hi = 2 * u_lo / (1 + u_lo), 2 * u_hi / (1 + u_hi)
    else:
        import numpy as np

        b2 = beta * beta
        rng = np.random.default_rng(counts_seed([tp, fp, fn], f"f{beta:g}"))
        # Independent gammas normalise to a Dirichlet draw; F-beta is scale-free, so the
        # normalisation can be skipped.
        g_tp, g_fp, g_fn = (rng.standard_gamma(c + JEFFREYS, POSTERIOR_DRAWS) for c in (tp, fp, fn))
        f = (1 + b2) * g_tp / ((1 + b2) * g_tp + b2 * g_fn + g_fp)
        lo, hi = (float(q) for q in np.quantile(f, [0.025, 0.975]))
    # As the Jeffreys interval of a proportion does at x = 0 and x = n: a bound the data
    # sit on is included (an all-right table reaches F = 1, an all-wrong one F = 0).
    return (0.0 if tp == 0 else lo), (1.0 if fp + fn == 0 else hi)


def bootstrap_counts(
    counts: Sequence[int],
    statistic: Callable[[Sequence[int]], float | None],
    resamples: int = 2000,
    seed: int = 20240917,
) -> tuple[float, float] | None:
    """Percentile bootstrap of a statistic of category counts (e.g. TP/FP/FN/TN).

    Resampling the counts (one multinomial draw per resample) rather than the cases makes
    the interval depend only on the counts, so it is identical whatever order cases
    arrived in, on one process or under xdist, and costs the same at 35,000 cases as at 40.
    It collapses to a point when every case is right; F-scores use
    :func:`f_beta_posterior` instead.
    """
    import numpy as np

    total = int(sum(counts))
    if total <= 0:
        return None
    rng = np.random.default_rng(seed)
    probs = np.asarray(counts, dtype=float) / total
    draws = rng.multinomial(total, probs, size=resamples)
    values = [statistic([int(x) for x in row]) for row in draws]
    kept = sorted(v for v in values if v is not None and not math.isnan(v))
    if len(kept) < resamples // 2:
        return None
    lo = kept[int(0.025 * (len(kept) - 1))]
    hi = kept[math.ceil(0.975 * (len(kept) - 1))]
    return lo, hi


def binom_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial test p-value for p = 0.5.

    What ``scipy.stats.binomtest(k, n).pvalue`` returns (the distribution is symmetric,
    so the two tails are equal), from the same binomial CDF routine without importing
    ``scipy.stats``; the tests check the two agree to 1e-12.
    """
    if n == 0:
        return 1.0
    from scipy.special import bdtr

    return min(1.0, 2.0 * float(bdtr(min(k, n - k), n, 0.5)))


def mcnemar_exact(b: int, c: int) -> float:
    """Exact McNemar p-value from the discordant counts b (A right, B wrong) and c."""
    return binom_two_sided(b, b + c)
