"""Confidence intervals and tests, deterministic so xdist and plain runs agree exactly."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist

Z95 = NormalDist().inv_cdf(0.975)


def wilson(successes: int, total: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for a proportion; None for 0/0."""
    if total <= 0:
        return None
    p = successes / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _t_quantile(df: int) -> float:
    """Two-sided 95% Student t critical value (Cornish-Fisher expansion, accurate to 1e-3)."""
    if df <= 0:
        return math.inf
    z = Z95
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    exact = {1: 12.7062, 2: 4.3027, 3: 3.1824, 4: 2.7764}
    if df in exact:
        return exact[df]
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def mean_ci(values: Sequence[float]) -> tuple[float, float] | None:
    """Student-t interval for a mean; None with fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    m = sum(values) / n
    var = sum((v - m) ** 2 for v in values) / (n - 1)
    half = _t_quantile(n - 1) * math.sqrt(var / n)
    return m - half, m + half


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
    """Exact two-sided binomial test p-value for p = 0.5 (used by exact McNemar)."""
    if n == 0:
        return 1.0
    k = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact McNemar p-value from the discordant counts b (A right, B wrong) and c."""
    return binom_two_sided(b, b + c)
