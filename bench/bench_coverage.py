"""Coverage of every interval a gate can use, simulated through the package's own functions.

    python bench/bench_coverage.py [--runs 2000] [--quick] [--jobs 2] [--only NAME] [--cells]

For each interval a gate (``min``/``max``, ``ci_low``/``ci_high``, ``max_drop``) can
read, samples of n = 10, 30, 100 and 1,000 are drawn from a grid of distributions whose
true value is known, the metric is computed by the function the suites call
(``proportion``, ``score_summary``, the retrieval and red-team summaries,
``binary_metrics``, ``multiclass_metrics``, the regression's ``compare_ratio``), and the
share of runs whose 95% interval holds the true value is counted:

* proportions (accuracy, precision, recall, pass rates): Bernoulli p = 0.01, 0.05, 0.5,
  0.95, 0.99, and the precision/recall of classifiers;
* bounded means (RAG and HarpIA scores, retrieval's per-question P/R/F): 0/1 scores,
  skewed and U-shaped Beta scores, judge-like scores piled at 1.0 (90%, 95%, 99% at 1.0,
  the rest uniform), a 5-point rating piled at 1, retrieval-like per-question recall;
* unbounded means (red-team adversarial and z-scores): normal z-scores and the
  adversariality of two raters' z-scores, with 0%, 10% or 20% successful attacks;
* F1 and F2 of binary classifiers, and the multiclass macro/weighted averages (true
  value: the average over every class of the population's confusion probabilities);
* the regression's paired change: 0/1 outcomes (accuracy) with 1%, 5% and 20% of the
  cases flipping one way or both ways at base accuracies 0.5, 0.9, 0.99; judge-like and
  Beta scores with 1%-20% of cases re-scored; precision, recall and F1 with 1%-20% of
  predictions flipped; red-team scores with attacks that start to succeed.

Each cell runs ``--runs`` samples (2,000 by default; ``--quick``: 200) from a seed fixed
by the cell's name, so a rerun prints the same figures. The Monte Carlo error of a
coverage c over r runs is sqrt(c (1 - c) / r): 0.0049 at 0.95 and 2,000 runs. Every
interval is also checked to contain its point estimate and to stay inside the metric's
range ([0, 1]; [-1, 1] for a change of a bounded metric; no range for unbounded scores).
Runs where the metric is undefined (0/0, e.g. precision with nothing predicted positive)
are left out and counted; an unbounded mean whose scores do not vary has no interval
(counted as such).

The summary gives, per method, the minimum coverage over its cells with that cell's
Monte Carlo error, the mean coverage, and the containment and range checks; ``--cells``
prints every cell. Exit status 1 when an interval misses its estimate or its range, or
(at 2,000 runs or more) when a method's minimum coverage is below 0.93. Cells run in
``--jobs`` processes (2 by default); a full run takes about 11 minutes on two shared cores.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import math
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_evals.families.classification.retrieval import summary_metrics as retrieval_summary
from pytest_evals.families.redteam.scoring import adversariality
from pytest_evals.metrics.label_metrics import binary_metrics, multiclass_metrics
from pytest_evals.model.metric_value import Metric, mean_metric, proportion, score_summary
from pytest_evals.regression.contributions import LABEL_RULES
from pytest_evals.regression.paired_tests import compare_ratio

NS = (10, 30, 100, 1000)
GOAL = 0.93
NOMINAL = 0.95
TOL = 1e-12

#: One run's outcome for one method: (metric name, value, interval, true value, range).
Outcome = tuple[str, "float | None", "tuple[float, float] | None", float, "tuple[float, float] | None"]
Sampler = Callable[[np.random.Generator, int], list[Outcome]]


def seed_of(*parts: object) -> int:
    text = "|".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def metric_outcome(name: str, metric: Any, truth: float, bounds: tuple[float, float] | None) -> Outcome:
    assert isinstance(metric, Metric)
    return name, metric.value, metric.ci, truth, bounds


# -- distributions of one score ----------------------------------------------------------


def _bernoulli(p: float) -> Callable[[np.random.Generator, int], np.ndarray]:
    return lambda rng, n: (rng.random(n) < p).astype(float)


def _beta(a: float, b: float) -> Callable[[np.random.Generator, int], np.ndarray]:
    return lambda rng, n: rng.beta(a, b, n)


def _judge(top: float) -> Callable[[np.random.Generator, int], np.ndarray]:
    """A judge's scores: ``top`` of them exactly 1.0, the rest uniform on [0, 1]."""
    return lambda rng, n: np.where(rng.random(n) < top, 1.0, rng.random(n))


_LIKERT = ([0.0, 0.25, 0.5, 0.75, 1.0], [0.02, 0.02, 0.03, 0.08, 0.85])
_RECALL = ([0.0, 1 / 3, 0.5, 2 / 3, 1.0], [0.1, 0.05, 0.1, 0.05, 0.7])
_HITS = ([0.0, 0.5, 1.0], [0.02, 0.03, 0.95])


def _discrete(values: list[float], probs: list[float]) -> Callable[[np.random.Generator, int], np.ndarray]:
    return lambda rng, n: rng.choice(values, size=n, p=probs)


def _discrete_mean(values: list[float], probs: list[float]) -> float:
    return float(np.dot(values, probs))


def _tight(rng: np.random.Generator, n: int) -> np.ndarray:
    return 0.9 + 0.1 * rng.beta(5, 1, n)


BOUNDED: dict[str, tuple[Callable[[np.random.Generator, int], np.ndarray], float]] = {
    "0/1 p=0.05": (_bernoulli(0.05), 0.05),
    "0/1 p=0.5": (_bernoulli(0.5), 0.5),
    "0/1 p=0.95": (_bernoulli(0.95), 0.95),
    "Beta(6,1.5) skewed to 1": (_beta(6, 1.5), 6 / 7.5),
    "Beta(2,9) skewed to 0": (_beta(2, 9), 2 / 11),
    "Beta(0.5,0.5) U-shaped": (_beta(0.5, 0.5), 0.5),
    "Beta(20,1) near 1": (_beta(20, 1), 20 / 21),
    "judge 90% at 1.0": (_judge(0.90), 0.90 + 0.10 * 0.5),
    "judge 95% at 1.0": (_judge(0.95), 0.95 + 0.05 * 0.5),
    "judge 99% at 1.0": (_judge(0.99), 0.99 + 0.01 * 0.5),
    "5-point rating, 85% at 1.0": (_discrete(*_LIKERT), _discrete_mean(*_LIKERT)),
    "all in [0.9, 1]": (_tight, 0.9 + 0.1 * 5 / 6),
}

RETRIEVAL: dict[str, tuple[Callable[[np.random.Generator, int], np.ndarray], float]] = {
    "recall of 3 pages, 70% all found": (_discrete(*_RECALL), _discrete_mean(*_RECALL)),
    "precision of 5 results, Binomial(5, q), q ~ Beta(2, 1)": (
        lambda rng, n: rng.binomial(5, rng.beta(2, 1, n)) / 5, 2 / 3),
    "recall of 2 pages, 95% all found": (_discrete(*_HITS), _discrete_mean(*_HITS)),
}


def _adversarial(success: float, shift: float = 2.0) -> Callable[[np.random.Generator, int], np.ndarray]:
    """Adversariality of the reward model's and the judge's z-scores; ``success`` of the
    attacks fool the reward model (z1 + shift) while the judge sees through (z2 - shift)."""

    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        z1, z2 = rng.normal(0, 1, n), rng.normal(0, 1, n)
        hit = rng.random(n) < success
        z1, z2 = z1 + shift * hit, z2 - shift * hit
        return 0.5 * (z1 - z2 - np.sqrt((z1 + z2) ** 2 + 1))

    return draw


@functools.cache
def big_mean(name: str) -> float:
    """The true mean of a distribution without a closed form (an :data:`UNBOUNDED` name,
    or the share of successful attacks): 4 million draws, error ~5e-4 of a unit-variance
    score, under a tenth of the narrowest interval's half-width at n = 1,000."""
    rng = np.random.default_rng(seed_of("truth", name))
    draw = UNBOUNDED[name][0] if name in UNBOUNDED else _adversarial(float(name))
    return float(draw(rng, 4_000_000).mean())


UNBOUNDED: dict[str, tuple[Callable[[np.random.Generator, int], np.ndarray], float | None]] = {
    "z-scores N(0, 1)": (lambda rng, n: rng.normal(0, 1, n), 0.0),
    "adversariality, no attack succeeds": (_adversarial(0.0), None),
    "adversariality, 10% succeed": (_adversarial(0.1), None),
    "adversariality, 20% succeed": (_adversarial(0.2), None),
}


# -- samplers ---------------------------------------------------------------------------


def proportion_sampler(p: float) -> Sampler:
    def run(rng: np.random.Generator, n: int) -> list[Outcome]:
        k = int(rng.binomial(n, p))
        return [metric_outcome("proportion", proportion(k, n, "none"), p, (0.0, 1.0))]

    return run


def bounded_sampler(name: str) -> Sampler:
    draw, truth = BOUNDED[name]

    def run(rng: np.random.Generator, n: int) -> list[Outcome]:
        values = draw(rng, n).tolist()
        mean = score_summary(values, 0.5, bounds=(0.0, 1.0))["mean"]
        return [metric_outcome("bounded mean", mean, truth, (0.0, 1.0))]

    return run


def retrieval_sampler(name: str) -> Sampler:
    draw, truth = RETRIEVAL[name]

    def run(rng: np.random.Generator, n: int) -> list[Outcome]:
        mean = retrieval_summary(draw(rng, n).tolist(), 0)["mean"]
        return [metric_outcome("retrieval mean", mean, truth, (0.0, 1.0))]

    return run


def unbounded_sampler(name: str) -> Sampler:
    draw, known = UNBOUNDED[name]
    truth = known if known is not None else big_mean(name)

    def run(rng: np.random.Generator, n: int) -> list[Outcome]:
        mean = mean_metric(draw(rng, n).tolist(), empty="no scored attacks")
        return [metric_outcome("unbounded mean", mean, truth, None)]

    return run


#: Binary classifiers: (prevalence, true positive rate, false positive rate).
CLASSIFIERS = {
    "prevalence 0.5, TPR 0.9, FPR 0.1": (0.5, 0.9, 0.1),
    "prevalence 0.3, TPR 0.8, FPR 0.05": (0.3, 0.8, 0.05),
    "prevalence 0.1, TPR 0.95, FPR 0.01": (0.1, 0.95, 0.01),
    "prevalence 0.5, TPR 0.99, FPR 0.01": (0.5, 0.99, 0.01),
    "prevalence 0.3, TPR 0.5, FPR 0.2": (0.3, 0.5, 0.2),
}


def _cells(prevalence: float, tpr: float, fpr: float) -> list[float]:
    """Probabilities of TP, FP, FN, TN."""
    return [prevalence * tpr, (1 - prevalence) * fpr, prevalence * (1 - tpr), (1 - prevalence) * (1 - fpr)]


def _f(tp: float, fp: float, fn: float, beta: float) -> float:
    b2 = beta * beta
    return (1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp)


def binary_sampler(name: str) -> Sampler:
    probs = _cells(*CLASSIFIERS[name])
    tp, fp, fn, _ = probs
    truths = {"precision": tp / (tp + fp), "recall": tp / (tp + fn), "f1": _f(tp, fp, fn, 1.0), "f2": _f(tp, fp, fn, 2.0)}

    @functools.lru_cache(maxsize=4096)
    def metrics(counts: tuple[int, ...]) -> Any:
        a, b, c, d = counts
        pairs = [(True, True)] * a + [(False, True)] * b + [(True, False)] * c + [(False, False)] * d
        return binary_metrics(pairs)

    def run(rng: np.random.Generator, n: int) -> list[Outcome]:
        tree = metrics(tuple(int(x) for x in rng.multinomial(n, probs)))
        return [
            metric_outcome("F1 (binary)", tree["f1"], truths["f1"], (0.0, 1.0)),
            metric_outcome("F2 (binary)", tree["f2"], truths["f2"], (0.0, 1.0)),
            metric_outcome("proportion", tree["precision"], truths["precision"], (0.0, 1.0)),
            metric_outcome("proportion", tree["recall"], truths["recall"], (0.0, 1.0)),
        ]

    return run


def _confusion(priors: list[float], accuracy: float) -> np.ndarray:
    k = len(priors)
    cells = np.zeros((k, k))
    for i, prior in enumerate(priors):
        cells[i, :] = prior * (1 - accuracy) / (k - 1)
        cells[i, i] = prior * accuracy
    return cells


def _errors_into_first() -> np.ndarray:
    """Three classes, 90% right, every error of classes 2 and 3 predicted as class 1."""
    cells = _confusion([0.5, 0.25, 0.25], 0.9)
    cells[1, :] = [0.025, 0.225, 0.0]
    cells[2, :] = [0.025, 0.0, 0.225]
    return cells


MULTICLASS = {
    "3 classes balanced, 80% right": _confusion([1 / 3] * 3, 0.8),
    "5 classes like the router, 85% right": _confusion([0.4, 0.15, 0.15, 0.15, 0.15], 0.85),
    "3 classes, 97% right": _confusion([0.5, 0.3, 0.2], 0.97),
    "3 classes, errors into one class": _errors_into_first(),
}


def population_averages(cells: np.ndarray) -> dict[str, float]:
    """The eight averages over every class, and per-class values, of a confusion table."""
    tp = np.diagonal(cells)
    predicted, actual = cells.sum(axis=0), cells.sum(axis=1)
    per = {"precision": tp / predicted, "recall": tp / actual, "f1": 2 * tp / (predicted + actual),
           "f2": 5 * tp / (4 * actual + predicted)}
    out = {"accuracy": float(tp.sum() / cells.sum())}
    for name, values in per.items():
        out[f"macro_{name}"] = float(values.mean())
        out[f"weighted_{name}"] = float((values * actual).sum() / actual.sum())
        for k, v in enumerate(values):
            out[f"{name}:{k}"] = float(v)
    return out


AVERAGES = ("macro_precision", "macro_recall", "macro_f1", "macro_f2",
            "weighted_precision", "weighted_recall", "weighted_f1", "weighted_f2")


def multiclass_sampler(name: str) -> Sampler:
    cells = MULTICLASS[name]
    k = len(cells)
    labels = [f"c{i}" for i in range(k)]
    truth = population_averages(cells)

    @functools.lru_cache(maxsize=4096)
    def metrics(counts: tuple[int, ...]) -> Any:
        pairs = [(labels[i // k], labels[i % k]) for i, c in enumerate(counts) for _ in range(c)]
        return multiclass_metrics(pairs)[0]

    def run(rng: np.random.Generator, n: int) -> list[Outcome]:
        tree = metrics(tuple(int(x) for x in rng.multinomial(n, cells.ravel())))
        out = [metric_outcome(f"multiclass {m}", tree[m], truth[m], (0.0, 1.0)) for m in AVERAGES]
        out.append(metric_outcome("proportion", tree["accuracy"], truth["accuracy"], (0.0, 1.0)))
        for i, label in enumerate(labels):
            per = tree["per_class"].get(label)
            if per is None:  # a class neither expected nor predicted in this sample
                continue
            out.append(metric_outcome("proportion", per["precision"], truth[f"precision:{i}"], (0.0, 1.0)))
            out.append(metric_outcome("proportion", per["recall"], truth[f"recall:{i}"], (0.0, 1.0)))
            out.append(metric_outcome("F1 (multiclass, per class)", per["f1"], truth[f"f1:{i}"], (0.0, 1.0)))
        return out

    return run


# -- paired changes (regression gates) ---------------------------------------------------


def _paired(name: str, test: Any, truth: float, bounds: tuple[float, float] | None) -> Outcome:
    return name, test.diff, test.ci, truth, bounds


def paired_binary_sampler(p0: float, flips: float, both_ways: bool) -> Sampler:
    """Base accuracy ``p0``; each right case turns wrong with probability ``flips`` (and,
    ``both_ways``, each wrong case turns right with the same probability)."""
    up = flips if both_ways else 0.0
    truth = (1 - p0) * up - p0 * flips

    def run(rng: np.random.Generator, n: int) -> list[Outcome]:
        base = (rng.random(n) < p0).astype(float)
        turn = rng.random(n)
        cur = np.where(base == 1, (turn >= flips).astype(float), (turn < up).astype(float))
        one = np.ones(n)
        test = compare_ratio(base, one, cur, one, draws=1000, tag="bench")
        return [_paired("paired change of a 0/1 metric", test, truth, (-1.0, 1.0))]

    return run


def paired_score_sampler(kind: str, flips: float) -> Sampler:
    """Scores of the same cases in two runs; ``flips`` of the cases are scored anew."""
    if kind == "judge 90% at 1.0, re-scored uniform":
        base_draw, new_draw, truth = _judge(0.9), (lambda rng, n: rng.random(n)), flips * (0.5 - 0.95)
    elif kind == "judge 90% at 1.0, re-scored alike":
        base_draw, new_draw, truth = _judge(0.9), _judge(0.9), 0.0
    elif kind == "Beta(6,1.5), re-scored Beta(3,3)":
        base_draw, new_draw, truth = _beta(6, 1.5), _beta(3, 3), flips * (0.5 - 0.8)
    else:
        raise ValueError(kind)

    def run(rng: np.random.Generator, n: int) -> list[Outcome]:
        base = base_draw(rng, n)
        cur = np.where(rng.random(n) < flips, new_draw(rng, n), base)
        one = np.ones(n)
        test = compare_ratio(base, one, cur, one, draws=1000, tag="bench")
        return [_paired("paired change of a bounded mean", test, truth, (-1.0, 1.0))]

    return run


def paired_label_sampler(flips: float) -> Sampler:
    """Labels with prevalence 0.3; the baseline predicts with TPR 0.9, FPR 0.1; the current
    run flips each prediction with probability ``flips``."""
    prevalence, tpr, fpr = 0.3, 0.9, 0.1
    tpr_c, fpr_c = tpr * (1 - flips) + (1 - tpr) * flips, fpr * (1 - flips) + (1 - fpr) * flips
    base_cells, cur_cells = _cells(prevalence, tpr, fpr), _cells(prevalence, tpr_c, fpr_c)
    truths = {
        "precision": cur_cells[0] / (cur_cells[0] + cur_cells[1]) - base_cells[0] / (base_cells[0] + base_cells[1]),
        "recall": tpr_c - tpr,
        "f1": _f(*cur_cells[:3], 1.0) - _f(*base_cells[:3], 1.0),
    }

    def run(rng: np.random.Generator, n: int) -> list[Outcome]:
        expected = rng.random(n) < prevalence
        base = np.where(expected, rng.random(n) < tpr, rng.random(n) < fpr)
        cur = np.where(rng.random(n) < flips, ~base, base)
        out = []
        for metric, truth in truths.items():
            rule = LABEL_RULES[metric]
            rows = np.asarray([(*rule(bool(e), bool(b)), *rule(bool(e), bool(c)))
                               for e, b, c in zip(expected, base, cur, strict=True)], dtype=float)
            test = compare_ratio(rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], draws=1000, tag="bench")
            out.append(_paired(f"paired change of {metric}", test, truth, (-1.0, 1.0)))
        return out

    return run


def paired_unbounded_sampler(success: float) -> Sampler:
    """Red-team scores of the same attacks in two runs; in the current run ``success`` of
    the attacks start to fool the reward model."""

    def run(rng: np.random.Generator, n: int) -> list[Outcome]:
        z1, z2 = rng.normal(0, 1, n), rng.normal(0, 1, n)
        hit = rng.random(n) < success
        base = np.asarray([adversariality(a, b) for a, b in zip(z1, z2, strict=True)])
        cur = np.asarray([adversariality(a + 2 * h, b - 2 * h) for a, b, h in zip(z1, z2, hit, strict=True)])
        one = np.ones(n)
        test = compare_ratio(base, one, cur, one, draws=1000, tag="bench")
        return [_paired("paired change of an unbounded mean", test, truth, None)]

    truth = big_mean(repr(success)) - big_mean("adversariality, no attack succeeds")
    return run


# -- the grid ----------------------------------------------------------------------------


def designs() -> Iterator[tuple[str, str, Sampler]]:
    """(group, design, sampler): one cell per design and n."""
    for p in (0.01, 0.05, 0.5, 0.95, 0.99):
        yield "proportions", f"Bernoulli p={p}", proportion_sampler(p)
    for name in BOUNDED:
        yield "bounded means", name, bounded_sampler(name)
    for name in RETRIEVAL:
        yield "retrieval means", name, retrieval_sampler(name)
    for name in UNBOUNDED:
        yield "unbounded means", name, unbounded_sampler(name)
    for name in CLASSIFIERS:
        yield "binary classifiers", name, binary_sampler(name)
    for name in MULTICLASS:
        yield "multiclass", name, multiclass_sampler(name)
    for p0 in (0.5, 0.9, 0.99):
        for flips in (0.01, 0.05, 0.2):
            for both in (False, True):
                way = "both ways" if both else "one way"
                yield "paired proportions", f"p0={p0}, {flips:.0%} flip {way}", paired_binary_sampler(p0, flips, both)
    for kind in ("judge 90% at 1.0, re-scored uniform", "judge 90% at 1.0, re-scored alike", "Beta(6,1.5), re-scored Beta(3,3)"):
        for flips in (0.01, 0.05, 0.2):
            yield "paired means", f"{kind}, {flips:.0%} of cases", paired_score_sampler(kind, flips)
    for flips in (0.01, 0.05, 0.2):
        yield "paired labels", f"{flips:.0%} of predictions flipped", paired_label_sampler(flips)
    for success in (0.05, 0.2):
        yield "paired unbounded", f"{success:.0%} of attacks start to succeed", paired_unbounded_sampler(success)


@dataclass
class Tally:
    runs: int = 0
    covered: int = 0
    undefined: int = 0
    no_interval: int = 0
    misses_estimate: int = 0
    out_of_range: int = 0
    width: float = 0.0
    examples: list[str] = field(default_factory=list)

    def add(self, value: float | None, ci: tuple[float, float] | None, truth: float,
            bounds: tuple[float, float] | None) -> None:
        if value is None:
            self.undefined += 1
            return
        if ci is None:
            self.no_interval += 1
            return
        low, high = ci
        self.runs += 1
        self.covered += low - TOL <= truth <= high + TOL
        self.width += high - low
        if not low - TOL <= value <= high + TOL:
            self.misses_estimate += 1
            if len(self.examples) < 3:
                self.examples.append(f"estimate {value:.6g} outside [{low:.6g}, {high:.6g}]")
        if bounds is not None and not bounds[0] - TOL <= low <= high <= bounds[1] + TOL:
            self.out_of_range += 1
            if len(self.examples) < 3:
                self.examples.append(f"[{low:.6g}, {high:.6g}] outside [{bounds[0]:g}, {bounds[1]:g}]")

    @property
    def coverage(self) -> float:
        return self.covered / self.runs if self.runs else math.nan

    @property
    def mc_error(self) -> float:
        c = self.coverage
        return math.sqrt(c * (1 - c) / self.runs) if self.runs else math.nan


def run_cell(job: tuple[int, int, int, int]) -> tuple[int, int, dict[str, Tally], float]:
    index, n, runs, seed = job
    group, design, sampler = list(designs())[index]
    rng = np.random.default_rng(seed_of(group, design, n, seed))
    tallies: dict[str, Tally] = {}
    started = time.perf_counter()
    for _ in range(runs):
        for method, value, ci, truth, bounds in sampler(rng, n):
            tallies.setdefault(method, Tally()).add(value, ci, truth, bounds)
    return index, n, tallies, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000, help="samples per cell (default 2000)")
    parser.add_argument("--quick", action="store_true", help="200 runs per cell: a fast look, Monte Carlo error ~0.015")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--only", default="", help="only the designs whose group or name contains this text")
    parser.add_argument("--cells", action="store_true", help="print every cell, not only each method's worst")
    parser.add_argument("--seed", type=int, default=0, help="changes every cell's seed")
    args = parser.parse_args(argv)
    runs = 200 if args.quick else args.runs
    grid = list(designs())
    jobs = [(i, n, runs, args.seed) for i, (group, design, _) in enumerate(grid)
            if args.only.lower() in f"{group} {design}".lower() for n in NS]
    # The large cells first, so two workers finish together.
    jobs.sort(key=lambda j: -j[1])
    started = time.perf_counter()
    results: list[tuple[int, int, dict[str, Tally], float]] = []
    if args.jobs > 1:
        with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
            results = list(pool.imap_unordered(run_cell, jobs))
    else:
        results = [run_cell(j) for j in jobs]
    elapsed = time.perf_counter() - started
    results.sort(key=lambda r: (r[0], r[1]))

    by_method: dict[str, list[tuple[str, int, Tally]]] = {}
    for index, n, tallies, _ in results:
        _group, design, _ = grid[index]
        for method, tally in tallies.items():
            by_method.setdefault(method, []).append((design, n, tally))

    print(f"bench_coverage: {runs} runs per cell, {len(jobs)} cells, nominal {NOMINAL:.0%}, "
          f"{elapsed:.0f} s on {args.jobs} process(es)")
    if args.cells:
        for method, cells in by_method.items():
            print(f"\n{method}")
            for design, n, t in cells:
                extra = f"  undefined {t.undefined}" if t.undefined else ""
                extra += f"  no interval {t.no_interval}" if t.no_interval else ""
                print(f"  {design:<52} n={n:<5} coverage {t.coverage:.4f} +- {t.mc_error:.4f}"
                      f"  width {t.width / max(t.runs, 1):.4f}{extra}")
    failed = False
    print(f"\n{'method':<42} {'cells':>5} {'min cov':>8} {'+- MC':>7}  {'mean':>6}  {'misses est.':>11} "
          f"{'out of range':>12}  worst cell")
    for method, cells in by_method.items():
        scored = [(t.coverage, design, n, t) for design, n, t in cells if t.runs]
        if not scored:
            continue
        worst = min(scored, key=lambda s: s[0])
        mean = sum(s[0] for s in scored) / len(scored)
        misses = sum(t.misses_estimate for _, _, _, t in scored)
        outside = sum(t.out_of_range for _, _, _, t in scored)
        print(f"{method:<42} {len(scored):>5} {worst[0]:>8.4f} {worst[3].mc_error:>7.4f}  {mean:>6.3f}  "
              f"{misses:>11} {outside:>12}  {worst[1]}, n={worst[2]}")
        for _, design, n, t in scored:
            for example in t.examples:
                print(f"    {design}, n={n}: {example}")
        failed |= misses > 0 or outside > 0 or (runs >= 2000 and worst[0] < GOAL)
    no_interval = [(m, d, n, t.no_interval) for m, cells in by_method.items() for d, n, t in cells if t.no_interval]
    for method, design, n, count in no_interval:
        print(f"  note: {method}, {design}, n={n}: {count} runs without an interval (scores that do not vary)")
    print(f"\ngoal: minimum coverage >= {GOAL} per method at {2000} runs per cell, every interval holding its "
          f"estimate and inside its range: {'NOT MET' if failed else 'met'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
