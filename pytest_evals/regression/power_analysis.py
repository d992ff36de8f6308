"""``pytest-evals power``: how many paired cases a regression gate needs.

Model: a case passes in the baseline with probability ``p``; in the new run a share
``drop`` more of the cases fail, and judge noise flips a share ``flip`` of cases in each
direction (measure it by running the same model twice). The discordant pairs then
get worse with probability drop + flip and better with probability flip, and the
gate's one-sided exact McNemar test rejects at ``alpha``. Power is exact: a sum over
the number of discordant pairs of the binomial test's rejection probability.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

GRID = (50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 35000)


def power(n: int, drop: float, flip: float = 0.0, alpha: float = 0.05) -> float:
    """Probability that the exact McNemar test flags the drop with ``n`` paired cases."""
    from scipy.stats import binom

    worse, better = drop + flip, flip
    p_disc = worse + better
    if n <= 0 or p_disc <= 0:
        return 0.0
    d = np.arange(0, n + 1)
    p_d = binom.pmf(d, n, p_disc)
    # isf(alpha) is the smallest x with P(W > x) <= alpha under the null, so the
    # test rejects from k = x + 1 worse-going pairs on.
    k = binom.isf(alpha, d, 0.5) + 1
    reject = binom.sf(k - 1, d, worse / p_disc)
    reject = np.where(d == 0, 0.0, reject)
    return float(np.sum(p_d * reject))


def cases_needed(drop: float, flip: float = 0.0, alpha: float = 0.05, target: float = 0.8,
                 limit: int = 2_000_000) -> int | None:
    """Smallest n (to within 1%) whose power reaches ``target``, or None beyond ``limit``."""
    lo, hi = 1, 1
    while power(hi, drop, flip, alpha) < target:
        lo, hi = hi, hi * 2
        if hi > limit:
            return None
    while hi - lo > max(1, lo // 100):
        mid = (lo + hi) // 2
        if power(mid, drop, flip, alpha) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def register(sub: Any) -> None:
    parser = sub.add_parser("power", help="how many paired cases a max_drop gate needs to see a drop",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--p", type=float, required=True, help="baseline pass rate / accuracy (0-1)")
    parser.add_argument("--drop", type=float, required=True, help="drop to detect, e.g. 0.02")
    parser.add_argument("--flip", type=float, default=0.0,
                        help="share of cases judge noise flips each way between two identical runs (default 0)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    parser.add_argument("--power", dest="target", type=float, default=0.8, help="wanted power (default 0.8)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    for name, value, low, high in (("--p", args.p, 0, 1), ("--drop", args.drop, 0, 1), ("--flip", args.flip, 0, 0.5),
                                   ("--alpha", args.alpha, 0, 1), ("--power", args.target, 0, 1)):
        if not low <= value <= high or (name != "--flip" and value in (0, 1) and name != "--p"):
            print(f"pytest-evals power: {name} must be in ({low}, {high}), got {value}")
            return 2
    if args.drop + args.flip > args.p or args.flip > 1 - args.p:
        print("pytest-evals power: drop + flip cannot exceed --p, nor flip exceed 1 - p")
        return 2
    n = cases_needed(args.drop, args.flip, args.alpha, args.target)
    print(f"baseline {args.p:g}, drop {args.drop:g}, noise flips {args.flip:g} each way, alpha {args.alpha:g}")
    if n is None:
        print(f"more than 2,000,000 paired cases are needed for power {args.target:g}")
    else:
        print(f"paired cases needed for power {args.target:g}: {n}")
    print()
    print(f"{'cases':>8}  power")
    for size in GRID:
        print(f"{size:>8}  {power(size, args.drop, args.flip, args.alpha):.3f}")
    return 0
