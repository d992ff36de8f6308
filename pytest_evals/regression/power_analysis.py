"""``pytest-evals power``: how often a ``max_drop`` gate on accuracy or a pass rate
catches a true drop, as the gate decides, and how many paired cases it needs.

Model: a case passes in the baseline with probability ``p``; in the new run a share
``drop`` more of the cases fail, and judge noise flips a share ``flip`` of cases in each
direction (measure it by running the same model twice). Per paired case, "got worse"
has probability drop + flip and "got better" flip.

The gate (:func:`pytest_evals.regression.drop_gates.judge`) says **regression** when
the observed drop is beyond its margin (``max_drop``) AND the one-sided exact McNemar
test (:func:`pytest_evals.regression.paired_tests.mcnemar`) gives p < alpha. Its
detection probability is computed exactly: a sum over the number of discordant pairs
of the binomial probability that the worse-going ones reach both the test's rejection
threshold and the margin. Because the observed drop must exceed the margin, a true
drop equal to the margin is caught about half the time at any number of cases: to
catch a drop of D reliably, the margin must be below D. ``--simulate`` runs the gate
itself (paired test, interval and verdict) on simulated runs and also reports how
often it says "no regression" and "inconclusive".
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from pytest_evals.regression.drop_gates import TOLERANCE

GRID = (50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 35000)
#: Probability mass left out of the sum over discordant counts (both tails).
_TAIL = 1e-12


def rejection_threshold(discordant: np.ndarray, alpha: float) -> np.ndarray:
    """Per number of discordant pairs d, the fewest worse-going pairs w for which the
    gate's test rejects (``mcnemar(w, d - w) < alpha``); d + 1 where it never does."""
    from scipy.special import bdtrc
    from scipy.stats import binom

    d = np.asarray(discordant, dtype=np.int64)
    # binom.isf gives the smallest x with P(X > x) <= alpha; the gate asks P(X >= w) < alpha
    # (strict), so the start is corrected below with the gate's own tail function.
    k = np.clip(np.nan_to_num(binom.isf(alpha, d, 0.5), nan=0.0).astype(np.int64) + 1, 1, None)

    def rejects(w: np.ndarray) -> np.ndarray:
        # mcnemar(w, d - w) = P(X >= w) = bdtrc(w - 1, d, 1/2); w = 0 never rejects.
        return (w >= 1) & (w <= d) & (bdtrc(w - 1, d, 0.5) < alpha)

    for _ in range(64):
        up = ~rejects(k) & (k <= d)
        down = (k > 1) & rejects(k - 1)
        if not (up.any() or down.any()):
            break
        k = k + up - down
    return np.where(rejects(k), k, d + 1)


def power(n: int, drop: float, flip: float = 0.0, alpha: float = 0.05, margin: float = 0.0) -> float:
    """Probability that a ``max_drop: margin`` gate says "regression" with ``n`` paired
    cases when the true drop is ``drop`` (``margin`` 0: the bare test's power)."""
    from scipy.stats import binom

    worse, better = drop + flip, flip
    p_disc = worse + better
    if n <= 0 or p_disc <= 0:
        return 0.0
    low = int(binom.ppf(_TAIL, n, p_disc)) if n > 1000 else 0
    high = int(binom.isf(_TAIL, n, p_disc)) + 1 if n > 1000 else n
    d = np.arange(max(0, low), min(n, high) + 1)
    p_d = binom.pmf(d, n, p_disc)
    k_test = rejection_threshold(d, alpha)
    # The observed drop (w - (d - w)) / n must be beyond the margin, as the gate checks it.
    k_margin = np.floor((n * (margin + TOLERANCE) + d) / 2).astype(np.int64) + 1
    k = np.maximum(k_test, k_margin)
    reject = np.where(k > d, 0.0, binom.sf(k - 1, d, worse / p_disc))
    return float(np.clip(np.sum(p_d * reject), 0.0, 1.0))


def cases_needed(drop: float, flip: float = 0.0, alpha: float = 0.05, target: float = 0.8,
                 limit: int = 2_000_000, margin: float = 0.0) -> int | None:
    """Smallest n (to within 1%) whose detection probability reaches ``target``, or None
    when it never does (a margin not below the drop, for a target above one half) or
    only beyond ``limit``."""
    if drop - margin <= TOLERANCE and target >= 0.5:
        return None
    lo, hi = 1, 1
    while power(hi, drop, flip, alpha, margin) < target:
        lo, hi = hi, hi * 2
        if hi > limit:
            return None
    while hi - lo > max(1, lo // 100):
        mid = (lo + hi) // 2
        if power(mid, drop, flip, alpha, margin) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def simulate_gate(n: int, p: float, drop: float, flip: float = 0.0, alpha: float = 0.05, margin: float = 0.0,
                  runs: int = 2000, seed: int = 0) -> dict[str, float]:
    """Share of simulated run pairs the gate itself calls regression / no regression /
    inconclusive: each pair of runs drawn from the model above, then the gate's paired
    test (:func:`~pytest_evals.regression.paired_tests.compare_ratio`) and verdict
    (:func:`~pytest_evals.regression.drop_gates.judge`)."""
    from pytest_evals.regression.drop_gates import RegressionGate, judge
    from pytest_evals.regression.paired_tests import compare_ratio

    gate = RegressionGate("accuracy", "max_drop", margin)
    rng = np.random.default_rng(seed)
    # Per case: worse (1 -> 0), better (0 -> 1), both right, both wrong.
    shares = np.array([drop + flip, flip, p - drop - flip, 1.0 - p - flip])
    base_of = np.array([1.0, 0.0, 1.0, 0.0])
    cur_of = np.array([0.0, 1.0, 1.0, 0.0])
    ones = np.ones(n)
    counts = {"regression": 0, "no regression": 0, "inconclusive": 0}
    for i in range(runs):
        kind = rng.choice(4, size=n, p=shares)
        test = compare_ratio(base_of[kind], ones, cur_of[kind], ones, tag=f"power:{i}")
        verdict = judge(gate, test, alpha).verdict
        counts[verdict or "inconclusive"] += 1
    return {k: v / runs for k, v in counts.items()}


def register(sub: Any) -> None:
    parser = sub.add_parser("power", help="how often a max_drop gate catches a drop, and how many paired cases it needs",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--p", type=float, required=True, help="baseline pass rate / accuracy (0-1)")
    parser.add_argument("--drop", type=float, required=True, help="true drop to catch, e.g. 0.02")
    parser.add_argument("--margin", type=float, default=None,
                        help="the gate's max_drop (default: equal to --drop, as a gate written to catch that drop)")
    parser.add_argument("--flip", type=float, default=0.0,
                        help="share of cases judge noise flips each way between two identical runs (default 0)")
    parser.add_argument("--alpha", type=float, default=0.05, help="the gate's significance level (default 0.05)")
    parser.add_argument("--power", dest="target", type=float, default=0.8, help="wanted detection probability (default 0.8)")
    parser.add_argument("--simulate", type=int, default=0, metavar="RUNS",
                        help="also run the gate itself on RUNS simulated run pairs per size up to 5,000 cases and "
                        "print how often it says regression / no regression / inconclusive")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    margin = args.drop if args.margin is None else args.margin
    for name, value, low, high in (("--p", args.p, 0, 1), ("--drop", args.drop, 0, 1), ("--flip", args.flip, 0, 0.5),
                                   ("--alpha", args.alpha, 0, 1), ("--power", args.target, 0, 1),
                                   ("--margin", margin, 0, 1)):
        if not low <= value <= high or (name not in ("--flip", "--p", "--margin") and value in (0, 1)):
            print(f"pytest-evals power: {name} must be in ({low}, {high}), got {value}")
            return 2
    if args.drop + args.flip > args.p or args.flip > 1 - args.p:
        print("pytest-evals power: drop + flip cannot exceed --p, nor flip exceed 1 - p")
        return 2
    given = "" if args.margin is not None else " (--margin not given: taken equal to --drop)"
    print(f"gate: max_drop {margin:g}{given}, alpha {args.alpha:g}: regression when the observed drop is beyond "
          f"{margin:g} and the exact McNemar test gives p < {args.alpha:g}")
    print(f"truth: baseline {args.p:g}, true drop {args.drop:g}, noise flips {args.flip:g} each way")
    n = cases_needed(args.drop, args.flip, args.alpha, args.target, margin=margin)
    if n is not None:
        print(f"paired cases needed for detection probability {args.target:g}: {n}")
    elif args.drop - margin <= TOLERANCE:
        print(f"detection probability {args.target:g} is never reached: a true drop not beyond the margin is "
              f"flagged at most about half the time, whatever the number of cases "
              f"(at 2,000,000 cases: {power(2_000_000, args.drop, args.flip, args.alpha, margin):.3f})")
        half = cases_needed(args.drop, args.flip, args.alpha, args.target, margin=margin / 2)
        if margin > 0 and half is not None:
            print(f"with max_drop {margin / 2:g} (half the margin): {half} paired cases")
    else:
        print(f"more than 2,000,000 paired cases are needed for detection probability {args.target:g}")
    print()
    header = f"{'cases':>8}  P(regression)"
    if args.simulate:
        header += "  simulated: regression  no regression  inconclusive"
    print(header)
    for size in GRID:
        line = f"{size:>8}  {power(size, args.drop, args.flip, args.alpha, margin):>13.3f}"
        if args.simulate and size <= 5000:
            sim = simulate_gate(size, args.p, args.drop, args.flip, args.alpha, margin, args.simulate)
            line += f"  {sim['regression']:>21.3f}  {sim['no regression']:>13.3f}  {sim['inconclusive']:>12.3f}"
        print(line)
    return 0
