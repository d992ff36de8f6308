"""Confidence intervals and tests, deterministic so xdist and plain runs agree exactly.

Quantiles and exact tests come from scipy's special functions (``scipy.special``, the
routines ``scipy.stats`` itself calls), imported inside the functions that need them:
importing ``scipy.stats`` costs seconds on a loaded machine, ``scipy.special`` a fifth.
The one exception is the Beta quantile of the proportion and F1 intervals, which every
run needs (:mod:`pytest_evals.stats.beta_quantile`, checked against scipy to 1e-12).
What each interval is, and why it was chosen, is in docs/core.md ("Intervals and their
coverage"); the coverage that chose them is measured by bench/bench_coverage.py.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Any

Z95 = NormalDist().inv_cdf(0.975)

#: Monte Carlo draws of a posterior (F-beta for beta != 1); the seed comes from the
#: counts, so the interval is a function of the counts alone (same under xdist).
POSTERIOR_DRAWS = 20_000



def wilson(successes: float, total: float, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for a proportion; None for 0/0.

    No metric uses it any more: its coverage falls to 0.84 near 0 and 1 (0.90 at n = 10,
    p = 0.01 or 0.99), see :func:`clopper_pearson`. Kept, checked against statsmodels,
    for callers that want the narrower approximate interval.
    """
    if total <= 0:
        return None
    p = successes / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(max(0.0, p * (1 - p)) / total + z * z / (4 * total * total)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def clopper_pearson(successes: float, total: float, level: float = 0.95) -> tuple[float, float] | None:
    """Clopper-Pearson ("exact") interval for a proportion; None for 0/0.

    The interval of every proportion (accuracy, precision, recall, pass rates), chosen
    by measurement (bench/bench_coverage.py): it inverts two exact binomial tests, so its
    coverage is at least 95% at every p and n, where Wilson's falls to 0.84 near 0 and 1
    (0.904 at n = 10, p = 0.01; 0.92 at n = 100, p = 0.99) and Jeffreys' to 0.87. The
    price is width: 8/10 gives [0.444, 0.975] against Wilson's [0.490, 0.943].

    The limits are Beta quantiles (x, n - x + 1) and (x + 1, n - x), so ``successes``
    and ``total`` may be fractional (the effective counts of :func:`bounded_mean_ci`);
    a limit the data sit on (x = 0, x = n) is that bound.
    """
    if total <= 0:
        return None
    return _clopper_pearson(min(max(float(successes), 0.0), float(total)), float(total), level)


@functools.lru_cache(maxsize=4096)
def _clopper_pearson(x: float, total: float, level: float) -> tuple[float, float]:
    # Cached: per-class and per-guardrail tables, and repeated aggregation, ask for the
    # same counts again; each limit costs a few hundred microseconds.
    from pytest_evals.stats.beta_quantile import beta_quantile  # not scipy: see its docstring

    tail = (1 - level) / 2
    low = 0.0 if x <= 0 else beta_quantile(x, total - x + 1, tail)
    high = 1.0 if x >= total else beta_quantile(x + 1, total - x, 1 - tail)
    return low, high

def t_quantile(df: int, level: float = 0.95) -> float:
    """Two-sided Student t critical value, exact (scipy)."""
    if df <= 0:
        return math.inf
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + level / 2))


def mean_ci(values: Sequence[float]) -> tuple[float, float] | None:
    """Student-t interval for the mean of an unbounded score.

    None with fewer than two values, and when the values do not vary: without bounds the
    spread of the sample is the only scale, and a zero spread would give a point (the
    t interval of [0.8, 0.8] is [0.8, 0.8]), which a gate on ``ci_low`` would trust.
    A score with known bounds uses :func:`bounded_mean_ci`.
    """
    n = len(values)
    if n < 2:
        return None
    m = math.fsum(values) / n
    var = math.fsum((v - m) ** 2 for v in values) / (n - 1)
    if not var > 0:
        return None
    half = t_quantile(n - 1) * math.sqrt(var / n)
    return m - half, m + half


#: Pseudo-observations at each bound in :func:`bounded_mean_ci`'s dispersion estimate.
BOUND_PSEUDO = 0.1


def bounded_mean_ci(values: Sequence[float], low: float = 0.0, high: float = 1.0) -> tuple[float, float] | None:
    """95% interval for the mean of a score bounded in [low, high]; None for no values.

    A quasi-binomial Clopper-Pearson interval. Rescaled to [0, 1], a bounded score's
    variance is at most m(1 - m), so the scores are treated as a proportion with
    dispersion phi = var / (m(1 - m)) <= 1: the Clopper-Pearson interval of the mean at
    the effective size n / phi (fractional counts). 0/1 scores, and scores all at one
    bound, have phi = 1 and give exactly the proportion's interval.

    The variance in phi is the unbiased one with :data:`BOUND_PSEUDO` (a tenth of) an
    observation added at each bound. A judge's scores pile at 1.0 with rare low ones; a
    sample that happens to miss them shows a tiny variance (29 ones and a 0.8: from its
    own dispersion the interval starts at 0.963, above the true mean 0.95 of 90% ones
    and 10% uniform scores), and without the pseudo-observations such judge-like
    scores were covered 93% of the time at n = 30. They keep phi near 1 until the
    sample is large enough to show its spread, and make one score, or identical
    scores, a wide interval rather than a point. Over bounded, skewed, U-shaped and
    judge-like scores at n = 10 to 1,000 (bench/bench_coverage.py) the coverage is 0.95
    or more up to the simulation's error. The interval never leaves [low, high] and
    always contains the mean.
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
    phi = 1.0
    if spread > 0:
        # The pseudo-observations at 0 and 1 lie m and 1 - m from the mean.
        squares = math.fsum((x - m) ** 2 for x in scaled) + BOUND_PSEUDO * (m * m + (1 - m) ** 2)
        phi = min(1.0, squares / (n - 1 + 2 * BOUND_PSEUDO) / spread)
    n_eff = n / phi
    ci = clopper_pearson(m * n_eff, n_eff)
    assert ci is not None
    return low + span * min(ci[0], m), low + span * max(ci[1], m)


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


def gamma_draws(shapes: Sequence[float], draws: int, salt: str = "") -> Any:
    """``draws`` rows of independent Gamma(shape) variables, seeded from the shapes.

    A row divided by its sum is a draw from Dirichlet(shapes); ratios of cells (precision,
    recall, F-scores, their averages) need no division. A cell of shape 0 is 0 in every
    row: a cell with no count and no prior mass, as Clopper-Pearson's limits have them.
    A numpy array of shape (draws, len(shapes)).
    """
    import numpy as np

    # repr() of a float is exact and the same on every platform: the seed, and so the
    # draws, depend on the shapes alone.
    text = ",".join(repr(float(x)) for x in shapes) + "|" + salt
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_gamma(np.asarray(shapes, dtype=float), size=(draws, len(shapes)))


@functools.lru_cache(maxsize=1024)
def f_beta_posterior(tp: int, fp: int, fn: int, beta: float = 1.0) -> tuple[float, float] | None:
    """95% interval of F-beta from the confusion counts, built as Clopper-Pearson's is.

    Clopper-Pearson's limits are quantiles of two posteriors: the lower of
    Beta(x, n - x + 1) (one more failure), the upper of Beta(x + 1, n - x) (one more
    success). The same here for the TP/FP/FN cell probabilities: the lower limit is the
    2.5% quantile of F under Dirichlet(tp, fp + 1/2, fn + 1/2), the upper the 97.5%
    quantile under Dirichlet(tp + 1, fp, fn), a cell of parameter 0 being 0.

    For F1 = 2J / (1 + J), J = TP / (TP + FP + FN) is a binomial proportion among the
    cases that are not true negatives, and the two posteriors give J the Beta
    distributions above: the F1 interval is exactly the Clopper-Pearson interval of J
    mapped to F1 (exact Beta quantiles), so its coverage is at least 95%. Other betas use
    :data:`POSTERIOR_DRAWS` draws seeded from the counts. The interval contains the
    estimate; an all-right table reaches 1, one with no TP reaches 0. None when there is
    nothing to score (tp = fp = fn = 0).

    (The Jeffreys posterior used before, Dirichlet(counts + 1/2), covered 0.90 at n = 10
    near F = 1, as the Jeffreys interval of a proportion does near p = 1.)
    """
    if tp + fp + fn <= 0:
        return None
    b2 = beta * beta
    estimate = (1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp)
    if beta == 1.0:
        ci = clopper_pearson(tp, tp + fp + fn)
        assert ci is not None
        lo, hi = (2 * j / (1 + j) for j in ci)
    else:
        import numpy as np

        def f_draws(shapes: list[float], salt: str) -> Any:
            g = gamma_draws(shapes, POSTERIOR_DRAWS, f"f{beta:g}{salt}")
            # F-beta is scale-free: the gammas need no normalisation to a Dirichlet draw.
            with np.errstate(invalid="ignore", divide="ignore"):
                return (1 + b2) * g[:, 0] / ((1 + b2) * g[:, 0] + b2 * g[:, 2] + g[:, 1])

        lo = 0.0 if tp == 0 else float(np.quantile(f_draws([tp, fp + 0.5, fn + 0.5], "low"), 0.025))
        hi = 1.0 if fp + fn == 0 else float(np.quantile(f_draws([tp + 1, fp, fn], "high"), 0.975))
    return min(lo, estimate), max(hi, estimate)


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
