"""Paired verdicts between the variants of a suite, on the same cases.

Every variant is compared with the suite's reference variant on every compared metric
(``compare_metrics``, default: each metric of the suite the paired tests have a rule
for, whose rule reproduces the suite's own value): the cases both variants scored are
paired by case id; pass/fail and accuracy get the exact McNemar test (two-sided: the
binomial test of the discordant pairs at 1/2, as ``scipy.stats.binomtest``) and Tango's
interval of the paired difference, precision/recall/F-beta and means the paired
randomization test (two-sided: twice the smaller one-sided p) and the paired
bootstrap interval (:mod:`pytest_evals.regression.paired_tests`). The p-values of
all the comparisons of a suite are adjusted together by Holm's step-down method
(the family: variants x metrics); a variant is "better" or "worse" than the reference
on a metric when its adjusted p is below alpha (``--evals-alpha``, default 0.05),
otherwise "no significant difference", with the smallest difference the paired cases
could have detected (80% power at alpha, two-sided, before the adjustment:
:mod:`pytest_evals.regression.power_analysis` for 0/1 metrics, the interval's
standard error otherwise).

The best variant on a metric is named only when it is better than every other variant
there: its paired tests against each of them (Holm-adjusted together) all reject, in
its favour. Otherwise the suite says "no significant difference".

Gates (in a variant's entry): ``better_than: {variant: ref, metric: accuracy, margin: 0}``
passes when the improvement is beyond the margin and significant (one-sided p < alpha),
as a regression gate's ``max_rise`` flags a rise; otherwise it fails, "not better"
(the interval excludes an improvement beyond the margin) or "inconclusive".
``no_worse_than: {variant: ref, metric: accuracy, margin: 0.02}`` is a ``max_drop``
regression gate with the other variant as the baseline: "worse" fails, "no worse"
passes, "inconclusive" passes unless ``--evals-fail-inconclusive``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_evals.controller.suite_verdict import Reason, ReasonKind
from pytest_evals.regression.contributions import contributor, label_rule, labels, positive_words
from pytest_evals.regression.drop_gates import (
    INCONCLUSIVE,
    NO_REGRESSION,
    REGRESSION,
    RegressionGate,
    judge,
)
from pytest_evals.regression.paired_tests import (
    DRAWS,
    PairedTest,
    _randomization_p,
    _seed,
    compare_ratio,
)

if TYPE_CHECKING:
    import pytest

    from pytest_evals.collection.variant_items import VariantTask
    from pytest_evals.controller.suite_verdict import SuiteSummary
    from pytest_evals.model.case_result import CaseResult
    from pytest_evals.tasks.task_contract import Task

_SCORED = ("passed", "failed")
BETTER, WORSE, NO_DIFFERENCE = "better", "worse", "no significant difference"
#: Power at which the smallest detectable difference is stated.
POWER = 0.8
#: Metrics tried first for the headline ("best variant") line, in this order.
PRIMARY = ("accuracy", "pass_rate", "f1")


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (as statsmodels' ``multipletests(..., 'holm')``)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def two_sided_mcnemar(only_ref: int, only_variant: int) -> float:
    """Exact McNemar: the two-sided binomial test of the discordant pairs at 1/2."""
    from scipy.special import bdtrc

    n = only_ref + only_variant
    if n == 0 or only_ref == only_variant:
        return 1.0
    k = max(only_ref, only_variant)
    return float(min(1.0, 2.0 * bdtrc(k - 1, n, 0.5)))


@dataclass
class Pairing:
    """One metric's per-case (num, den) of two variants over the cases both scored."""

    rows: np.ndarray  # columns: num_a, den_a, num_b, den_b

    @property
    def n(self) -> int:
        return int(self.rows.shape[0])

    @property
    def binary(self) -> bool:
        r = self.rows
        return bool(np.all(r[:, 1] == 1) and np.all(r[:, 3] == 1)
                    and np.all(np.isin(r[:, 0], (0.0, 1.0))) and np.all(np.isin(r[:, 2], (0.0, 1.0))))


#: The group of a nested metric path over all cases (HaluEval's ``overall.accuracy``).
OVERALL = "overall"


def contribution_rule(task: Task[Any], metric: str) -> Any:
    """One case's ``(num, den)`` of ``metric`` from its result, or None when no paired
    rule knows the metric: the regression gates' rules (a top-level metric, a score's
    mean, the task's own ``paired_contribution``), and, for a nested path
    ``<group>.<metric>``, the same rule over the cases of that group: ``overall`` for
    all cases, else those whose ``data`` has that value in the field the task's family
    groups comparisons by (its ``GROUP_FIELDS``)."""
    words = positive_words(task)

    def direct(name: str) -> Any:
        by_labels = label_rule(task, name)
        if by_labels is not None:
            def from_labels(r: CaseResult) -> tuple[float, float] | None:
                got = labels(r.data, words)
                return None if got is None else by_labels(*got)
            return from_labels
        fn = contributor(task, name)
        if fn is None:
            return None
        return lambda r: fn(r.data, r.scores, r.status)

    rule = direct(metric)
    if rule is not None or "." not in metric:
        return rule
    group, _, rest = metric.partition(".")
    inner = direct(rest)
    if inner is None:
        return None
    if group == OVERALL:
        return inner
    from pytest_evals.registry.family_registry import group_field

    field_name = group_field(task.name)
    if field_name is None:
        return None
    return lambda r: inner(r) if str(r.data.get(field_name)) == group else None


def pair(task: Task[Any], metric: str, a: dict[str, CaseResult], b: dict[str, CaseResult]) -> Pairing | None:
    """``metric``'s contributions of the cases both variants scored (None: no rule for it)."""
    rule = contribution_rule(task, metric)
    if rule is None:
        return None
    return pair_contributions(contributions(rule, a), contributions(rule, b), a, b)


Contributions = dict[str, "tuple[float, float] | None"]


def contributions(rule: Any, results: dict[str, CaseResult]) -> Contributions:
    """Each scored case's contribution by ``rule`` (None: the case has none), by case id
    in the results' order: computed once per variant, rule and metric, for every
    comparison that pairs them."""
    return {cid: rule(r) for cid, r in results.items() if r.status in _SCORED}


def pair_contributions(ca: Contributions, cb: Contributions, a: dict[str, CaseResult],
                       b: dict[str, CaseResult]) -> Pairing:
    """The rows of the cases both variants scored and both have a contribution for, in
    ``a``'s order."""
    rows: list[tuple[float, float, float, float]] = []
    for cid, x in ca.items():
        if x is None or cid not in cb:
            continue
        y = cb[cid]
        if y is None:
            continue
        fa, fb = a[cid].fingerprint, b[cid].fingerprint
        if fa and fb and fa != fb:
            continue  # not the same input under the two variants (a variant changed what a case is)
        rows.append((x[0], x[1], y[0], y[1]))
    return Pairing(np.asarray(rows, dtype=np.float64).reshape(-1, 4))


def value_by_rule(task: Task[Any], metric: str, results: Sequence[CaseResult]) -> float | None:
    """``metric`` by its paired rule over the cases a task aggregates (scored ones and
    erroring ones with data): the suite's own value must equal it, else a paired test
    would test another quantity than the suite reports."""
    rule = contribution_rule(task, metric)
    if rule is None:
        return None
    parts = [c for r in results if r.status in _SCORED or (r.status == "error" and r.data)
             if (c := rule(r)) is not None]
    den = sum(d for _, d in parts)
    return sum(n for n, _ in parts) / den if den > 0 else None


@functools.lru_cache(maxsize=64)
def _mcnemar_rejection(n: int, alpha: float) -> np.ndarray:
    """Per number of discordant pairs d (0..n), the fewest pairs going one way for which
    the one-sided exact test at ``alpha`` rejects (P(X >= w) < alpha, X ~ Bin(d, 1/2),
    :func:`~pytest_evals.regression.paired_tests.mcnemar`) AND the observed difference is
    above 0: the rule :func:`pytest_evals.regression.power_analysis.power` uses at margin
    0 (d + 1 where nothing rejects). A vectorised bisection on scipy.special's binomial
    tail: scipy.stats costs seconds to import, more than every test of a run."""
    from scipy.special import bdtrc

    from pytest_evals.regression.drop_gates import TOLERANCE

    d = np.arange(n + 1, dtype=np.int64)
    lo = np.ones(n + 1, dtype=np.int64)  # P(X >= w) decreases in w: find the first w < alpha
    hi = d + 1  # d + 1: "never" (P(X >= d + 1) = 0 is not a rejection by an observed count)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        rejects = (mid <= d) & (bdtrc(mid - 1, d, 0.5) < alpha)
        hi = np.where((lo < hi) & rejects, mid, hi)
        lo = np.where((lo < hi) & ~rejects, mid + 1, lo)
    k_margin = np.floor((n * TOLERANCE + d) / 2).astype(np.int64) + 1
    return np.asarray(np.maximum(lo, k_margin))


def mcnemar_detectable(n: int, flip: float, alpha: float) -> float | None:
    """The smallest difference of paired proportions that the two-sided exact McNemar test
    at ``alpha`` detects with 80% power over ``n`` pairs, with ``flip`` of the cases
    changing each way by noise: the power of :func:`~pytest_evals.regression.power_analysis.power`
    (one-sided at alpha / 2), its rejection thresholds computed once and the difference
    found by bisection."""
    from scipy.special import bdtrc, gammaln

    counts = np.arange(n + 1, dtype=np.int64)
    d = counts.astype(np.float64)
    k = _mcnemar_rejection(n, alpha / 2)
    log_choose = gammaln(n + 1) - gammaln(d + 1) - gammaln(n - d + 1)

    def power_at(drop: float) -> float:
        worse = drop + flip
        p_disc = min(1.0, worse + flip)
        if p_disc <= 0:
            return 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            log_pmf = log_choose + d * np.log(p_disc) + (n - d) * np.log1p(-p_disc) if p_disc < 1 else \
                np.where(d == n, 0.0, -np.inf)
        pmf = np.exp(np.nan_to_num(log_pmf, nan=-np.inf))
        tail = bdtrc(np.minimum(k, counts) - 1, counts, min(1.0, worse / p_disc))
        reject = np.where(k > counts, 0.0, tail)
        return float(np.sum(pmf * reject))

    lo, hi = 0.0, 1.0 - 2 * flip
    if hi <= 0 or power_at(hi) < POWER:
        return None
    for _ in range(20):  # to 1e-6 of the range: below the 4 decimals shown
        mid = (lo + hi) / 2
        if power_at(mid) >= POWER:
            hi = mid
        else:
            lo = mid
    return hi


def detectable(p: Pairing, test: PairedTest, alpha: float) -> float | None:
    """The smallest difference the paired cases could have detected with 80% power
    (two-sided at ``alpha``): for 0/1 outcomes the exact McNemar power with the observed
    share of discordant pairs as noise (:func:`mcnemar_detectable`); otherwise
    (z_{1-alpha/2} + z_{0.8}) standard errors, the standard error read off the paired
    interval."""
    if p.n == 0:
        return None
    if p.binary and test.worse is not None and test.better is not None:
        return mcnemar_detectable(p.n, (test.worse + test.better) / (2 * p.n), alpha)
    if test.ci is None:
        return None
    from statistics import NormalDist

    z = NormalDist().inv_cdf
    se = (test.ci[1] - test.ci[0]) / (2 * z(0.975))
    found = float((z(1 - alpha / 2) + z(POWER)) * se)
    bounded = all(v is not None and 0.0 <= v <= 1.0 for v in (test.baseline, test.current))
    # Beyond the whole range of a [0, 1] metric: no difference was detectable at all.
    return None if bounded and found >= 1.0 else found


@dataclass
class Comparison:
    """Variant ``variant`` minus variant ``against`` on ``metric``."""

    variant: str
    against: str
    metric: str
    test: PairedTest
    p_value: float | None
    p_holm: float | None = None
    verdict: str | None = None
    detectable: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        t = self.test
        out: dict[str, Any] = {
            "variant": self.variant, "against": self.against, "metric": self.metric,
            "against_value": t.baseline, "value": t.current, "diff": t.diff,
            "ci_low": t.ci[0] if t.ci else None, "ci_high": t.ci[1] if t.ci else None,
            "method": t.method, "paired": t.n, "p_value": self.p_value, "p_holm": self.p_holm,
            "verdict": self.verdict,
        }
        if t.worse is not None:
            # The discordant pairs: only the other variant right, only this one right.
            out["only_against"], out["only_variant"] = t.worse, t.better
        if self.detectable is not None:
            out["detectable"] = self.detectable
        if t.reason:
            out["reason"] = t.reason
        return out


def compare(p: Pairing, variant: str, against: str, metric: str, tag: str) -> Comparison:
    """Two-sided paired test of ``variant`` against ``against`` (columns b minus a)."""
    r = p.rows
    lower = compare_ratio(r[:, 0], r[:, 1], r[:, 2], r[:, 3], tag=tag)
    if lower.diff is None or lower.p_value is None:
        return Comparison(variant, against, metric, lower, None)
    if lower.method == "exact McNemar":
        assert lower.worse is not None and lower.better is not None
        p_two = two_sided_mcnemar(lower.worse, lower.better)
    else:
        # The other tail from the same draws (compare_ratio seeds them by tag and n): what
        # compare_ratio(..., lower_is_better=True) would say, without its second bootstrap
        # interval.
        higher = _randomization_p(r[:, 0], r[:, 1], r[:, 2], r[:, 3], lower.diff, 1.0, DRAWS,
                                  _seed(p.n, "perm" + tag))
        p_two = min(1.0, 2 * min(lower.p_value, higher))
    return Comparison(variant, against, metric, lower, p_two)


def flipped(c: Comparison) -> Comparison:
    """``c`` read the other way round (``against`` minus ``variant``): the same two-sided
    p-value (both tails of one set of draws, or McNemar's symmetric test), the difference
    and its interval negated, the discordant counts swapped."""
    t = c.test
    test = PairedTest(t.current, t.baseline, None if t.diff is None else -t.diff,
                      None if t.ci is None else (-t.ci[1], -t.ci[0]), None, t.method, t.n, t.better, t.worse, t.reason)
    out = Comparison(c.against, c.variant, c.metric, test, c.p_value, detectable=c.detectable)
    if "pairing" in c.extra:
        rows = c.extra["pairing"].rows
        out.extra["pairing"] = Pairing(rows[:, [2, 3, 0, 1]])
    return out


def _verdict(c: Comparison, alpha: float) -> str:
    if c.p_holm is None or c.test.diff is None:
        return "undefined"
    if c.p_holm < alpha and c.test.diff != 0:
        return BETTER if c.test.diff > 0 else WORSE
    return NO_DIFFERENCE


def _is_count(path: str) -> bool:
    top = path.split(".")[0]
    return top in ("cases", "errors") or top.startswith("errors_")


def compared_metrics(task: VariantTask, summary: SuiteSummary, by_variant: dict[str, dict[str, CaseResult]]) -> tuple[list[str], list[str]]:
    """(metrics to compare, problems): the suite's ``compare_metrics``, or every metric of
    the reference variant whose paired rule gives the value the suite reports."""
    from pytest_evals.model.metric_value import walk

    ref = task.by_name[task.reference]
    values = dict(walk(summary.metrics.get(ref.name) or {}))  # type: ignore[arg-type]
    results = list(by_variant[ref.name].values())
    wanted = task.spec.compare_metrics
    out: list[str] = []
    problems: list[str] = []
    for path, metric in values.items():
        if _is_count(path) or metric.value is None or metric.kind == "count":
            continue
        if wanted is not None and path not in wanted:
            continue
        mine = value_by_rule(ref.task, path, results)
        if mine is None or abs(mine - float(metric.value)) > 1e-6 * max(1.0, abs(mine)):
            if wanted is not None:
                problems.append(f"compare_metrics: {path!r} has no paired test that reproduces the suite's value")
            continue
        out.append(path)
    for path in wanted or []:
        if path not in values:
            problems.append(f"compare_metrics: the suite has no metric {path!r}")
    return out, problems


def _best(task: VariantTask, metric: str, run: Any, values: dict[str, float | None], alpha: float) -> dict[str, Any]:
    """Whether one variant is significantly better than every other on ``metric``
    (``run(variant, against, metric)`` gives a two-sided paired comparison)."""
    defined = {k: v for k, v in values.items() if v is not None}
    if len(defined) < 2:
        return {"metric": metric, "best": None, "verdict": "undefined"}
    top = max(defined.values())
    leaders = [k for k, v in defined.items() if v == top]
    out: dict[str, Any] = {"metric": metric, "best": None, "candidate": leaders[0] if len(leaders) == 1 else None}
    if len(leaders) > 1:
        out["verdict"] = NO_DIFFERENCE
        out["reason"] = f"{' and '.join(leaders)} tie"
        return out
    cand = leaders[0]
    tests = [c for other in task.order if other != cand and (c := run(cand, other, metric)) is not None]
    ps = [t.p_value if t.p_value is not None else 1.0 for t in tests]
    adjusted = holm(ps)
    out["against"] = [
        {"variant": t.against, "diff": t.test.diff, "p_value": p, "p_holm": a} for t, p, a in zip(tests, ps, adjusted, strict=True)
    ]
    wins = len(tests) == len(task.order) - 1 and all(
        a < alpha and (t.test.diff or 0) > 0 for t, a in zip(tests, adjusted, strict=True)
    )
    if wins:
        out["best"] = cand
        out["verdict"] = BETTER
    else:
        out["verdict"] = NO_DIFFERENCE
        for t in tests:
            if t.detectable is None and t.p_value is not None:
                t.detectable = detectable(t.extra["pairing"], t.test, alpha)
        dets = [t.detectable for t in tests if t.detectable is not None]
        if dets:
            out["detectable"] = max(dets)
    return out


def apply_variant_verdicts(config: pytest.Config, summary: SuiteSummary, task: VariantTask,
                           results: Sequence[CaseResult]) -> None:
    """Adds the comparisons, the best variant and the variant gates to the suite's
    ``variants`` section; a failed gate fails the suite."""
    from pytest_evals.regression.regression_plugin import _alpha, _flag

    block = summary.sections.get("variants")
    if block is None:
        return
    alpha = _alpha(config)
    by_variant: dict[str, dict[str, CaseResult]] = {n: {} for n in task.order}
    for r in results:
        from pytest_evals.collection.variant_items import split_case_id

        base, v = split_case_id(r.case_id, task.names)
        if v is not None:
            by_variant[v][base] = r
    metrics, problems = compared_metrics(task, summary, by_variant)
    for text in problems:
        summary.add_problem(text)
    ref = task.reference
    cache: dict[tuple[str, str, str], Pairing | None] = {}
    rules: dict[tuple[str, str], Any] = {}
    contributed: dict[tuple[str, str, str], Contributions] = {}

    def contribution(rule_of: str, metric: str, results_of: str) -> Contributions:
        # Variant ``results_of``'s cases by the rule of ``rule_of``'s task: the reference's
        # are paired with every other variant, each variant's again in the best-variant tests.
        key = (rule_of, metric, results_of)
        if key not in contributed:
            contributed[key] = contributions(rules[(rule_of, metric)], by_variant[results_of])
        return contributed[key]

    def pairing(a: str, b: str, metric: str) -> Pairing | None:
        key = (a, b, metric)
        if key not in cache:
            if (a, metric) not in rules:
                rules[(a, metric)] = contribution_rule(task.by_name[a].task, metric)
            if rules[(a, metric)] is None:
                cache[key] = None
            else:
                cache[key] = pair_contributions(contribution(a, metric, a), contribution(a, metric, b),
                                                by_variant[a], by_variant[b])
        return cache[key]

    done: dict[tuple[str, str, str], Comparison | None] = {}

    def run(variant: str, against: str, metric: str) -> Comparison | None:
        key = (variant, against, metric)
        if key in done:
            return done[key]
        mirror = done.get((against, variant, metric))
        if mirror is not None:
            # The best-variant tests pair the same variants again: the reference's
            # comparison read the other way round is the same test.
            return flipped(mirror)
        p = pairing(against, variant, metric)
        if p is None:
            done[key] = None
            return None
        c = compare(p, variant, against, metric, tag=f"{summary.suite}:{against}:{variant}:{metric}")
        c.extra["pairing"] = p
        done[key] = c
        return c

    comparisons = [c for v in task.order if v != ref for m in metrics if (c := run(v, ref, m)) is not None]
    tested = [c for c in comparisons if c.p_value is not None]
    for c, a in zip(tested, holm([c.p_value for c in tested if c.p_value is not None]), strict=True):
        c.p_holm = a
    for c in comparisons:
        c.verdict = _verdict(c, alpha)
        if c.verdict == NO_DIFFERENCE:
            c.detectable = detectable(c.extra["pairing"], c.test, alpha)
    block["alpha"] = alpha
    block["compared_metrics"] = metrics
    block["comparisons"] = [c.to_json() for c in comparisons]
    best = [_best(task, m, run, {v: _value(summary, v, m) for v in task.order}, alpha) for m in metrics]
    block["best"] = best
    primary = next((m for m in PRIMARY if m in metrics), metrics[0] if metrics else None)
    block["primary_metric"] = primary
    block["gates"] = _gates(config, summary, task, by_variant, alpha, _flag(config, "evals_fail_inconclusive"))


def _value(summary: SuiteSummary, variant: str, metric: str) -> float | None:
    from pytest_evals.model.metric_value import walk

    for path, m in walk(summary.metrics.get(variant) or {}):  # type: ignore[arg-type]
        if path == metric:
            return None if m.value is None else float(m.value)
    return None


_WORDS = {
    "better_than": {REGRESSION: "better", NO_REGRESSION: "not better", INCONCLUSIVE: INCONCLUSIVE},
    "no_worse_than": {REGRESSION: "worse", NO_REGRESSION: "no worse", INCONCLUSIVE: INCONCLUSIVE},
}


def _gates(config: pytest.Config, summary: SuiteSummary, task: VariantTask, by_variant: dict[str, dict[str, CaseResult]],
           alpha: float, fail_inconclusive: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for v in task.variants:
        for kind, gates in (("better_than", v.spec.better_than), ("no_worse_than", v.spec.no_worse_than)):
            for g in gates:
                head = f"{v.name} {kind} {g.variant} on {g.metric} (margin {g.margin:g})"
                p = pair(task.by_name[g.variant].task, g.metric, by_variant[g.variant], by_variant[v.name])
                if p is None:
                    text = f"{head}: no paired test for {g.metric!r} (a top-level accuracy, precision, recall, f1, " \
                           "f2, pass_rate or a score's mean)"
                    summary.add_problem(text)
                    out.append({"variant": v.name, "kind": kind, "against": g.variant, "metric": g.metric,
                                "margin": g.margin, "status": "failed", "verdict": None, "passed": False, "reason": text})
                    continue
                other = task.by_name[g.variant]
                reported = _value(summary, g.variant, g.metric)
                by_rule = value_by_rule(other.task, g.metric, list(by_variant[g.variant].values()))
                if reported is not None and by_rule is not None and \
                        abs(by_rule - reported) > 1e-6 * max(1.0, abs(by_rule)):
                    # The rule exists but measures something else here (a multiclass
                    # precision read as "yes vs rest"): a verdict on it would not be about
                    # the metric the suite reports.
                    text = (f"{head}: the paired test's rule for {g.metric!r} gives {by_rule:.6g} over variant "
                            f"{g.variant}'s cases, but its {g.metric} is {reported:.6g}: the gate would test another "
                            "quantity")
                    summary.add_problem(text)
                    out.append({"variant": v.name, "kind": kind, "against": g.variant, "metric": g.metric,
                                "margin": g.margin, "status": "failed", "verdict": None, "passed": False,
                                "reason": text})
                    continue
                r = p.rows
                op = "max_rise" if kind == "better_than" else "max_drop"
                test = compare_ratio(r[:, 0], r[:, 1], r[:, 2], r[:, 3], lower_is_better=kind == "better_than",
                                     tag=f"{summary.suite}:{kind}:{g.variant}:{v.name}:{g.metric}")
                result = judge(RegressionGate(g.metric, op, g.margin, g.alpha), test, alpha,
                               fail_inconclusive=fail_inconclusive and kind == "no_worse_than")
                word = _WORDS[kind].get(result.verdict or "", None)
                passed = result.verdict == REGRESSION if kind == "better_than" else result.passed
                t = result.test
                if t is not None and t.diff is not None and t.p_value is not None:
                    ci = f" [{t.ci[0]:+.4f}, {t.ci[1]:+.4f}]" if t.ci else ""
                    text = (f"{head}: {t.baseline:.4f} -> {t.current:.4f}, change {t.diff:+.4f}{ci}, "
                            f"p = {t.p_value:.3g} ({t.method}, {t.n} paired cases, alpha {result.alpha:g}) -> "
                            f"{word or result.status}")
                else:
                    text = f"{head}: {result.reason or 'undefined'}"
                if result.reason and t is not None and t.diff is not None:
                    text += f" ({result.reason})"
                entry = {**result.to_json(), "variant": v.name, "kind": kind, "against": g.variant,
                         "verdict": word, "passed": passed, "status": "passed" if passed else
                         ("inconclusive" if result.verdict == INCONCLUSIVE and kind == "no_worse_than" else "failed"),
                         "text": text}
                entry.pop("op", None)
                if kind == "better_than" and "worse" in entry:
                    # The test ran as a max_rise gate, whose "worse" cases are the ones
                    # that rose: for better_than those are this variant's better cases.
                    entry["worse"], entry["better"] = entry["better"], entry["worse"]
                out.append(entry)
                if not passed:
                    undecided = result.verdict == INCONCLUSIVE and kind == "no_worse_than"
                    summary.reasons.append(Reason(ReasonKind.INCONCLUSIVE if undecided else ReasonKind.MISSED_GATE, text))
    return out


def fmt_p(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return "-"
    return f"{p:.3g}"


def apply_baseline_to_variants(config: pytest.Config, summary: SuiteSummary, task: Any,
                               results: Sequence[CaseResult]) -> bool:
    """Regression gates and a baseline for a suite with variants (False: not one).

    Each variant is checked as the suite alone would be, against the baseline's cases of
    the same variant (ids ``case[variant]``): the regression rules of
    :func:`~pytest_evals.regression.regression_plugin.apply_to_suite` on the variant's
    own summary and cases, with the baseline seen through that variant. Its gates are
    reported as ``<variant>.<metric>`` in the suite's ``baseline`` block; the suite as a
    whole (no gates) gives the block's paired counts and flipped cases."""
    import dataclasses

    from pytest_evals.collection.variant_items import is_variant_task, split_case_id
    from pytest_evals.controller.suite_verdict import CaseCounts, SuiteSummary
    from pytest_evals.regression.baseline_run import Baseline
    from pytest_evals.regression.regression_plugin import (
        BASELINE_KEY,
        COMPARISONS_KEY,
        apply_to_suite,
        get_baseline,
    )

    if not is_variant_task(task):
        return False
    vt: VariantTask = task
    whole = dataclasses.replace(summary, config={**(summary.config or {}), "thresholds": {}}, reasons=[], problems=[],
                                sections=dict(summary.sections))
    apply_to_suite(config, whole, vt, results)
    summary.reasons += whole.reasons
    summary.problems += whole.problems
    block = whole.sections.get("baseline")
    comparisons = config.stash.get(COMPARISONS_KEY, {})
    overall = comparisons.get(summary.suite)
    full = get_baseline(config)
    by_variant: dict[str, list[CaseResult]] = {v.name: [] for v in vt.variants}
    for r in results:  # each case id read once, not once per variant
        name = split_case_id(r.case_id, vt.names)[1]
        if name is not None:
            by_variant[name].append(r)
    for v in vt.variants:
        mine = by_variant[v.name]
        part = SuiteSummary(
            suite=summary.suite, name=summary.name, task=summary.task, what=summary.what, generate=summary.generate,
            config=v.suite.config.model_dump(mode="json"), cases=CaseCounts.of(mine),
            metrics=summary.metrics.get(v.name) or {}, tables={}, gates=[], problems=[], reasons=[],  # type: ignore[arg-type]
            sections={"settings": summary.sections.get("settings")},
        )
        if isinstance(full, Baseline):
            suffix = f"[{v.name}]"
            config.stash[BASELINE_KEY] = dataclasses.replace(full, suites={
                sid: {cid: c for cid, c in cases.items() if cid.endswith(suffix)} for sid, cases in full.suites.items()
            })
        comparisons.pop(summary.suite, None)
        try:
            apply_to_suite(config, part, v.task, mine)
        finally:
            config.stash[BASELINE_KEY] = full
        for reason in part.reasons:
            summary.reasons.append(Reason(reason.kind, f"variant {v.name}: {reason.text}"))
        summary.problems += [f"variant {v.name}: {p}" for p in part.problems]
        got = part.sections.get("baseline") or {}
        gates = [{**g, "metric": f"{v.name}.{g['metric']}"} for g in got.get("gates") or []]
        if not gates:
            continue
        if block is None:
            block = {k: val for k, val in got.items() if k not in ("gates", "inconclusive")}
        block["gates"] = [*(block.get("gates") or []), *gates]
        block["inconclusive"] = [*(block.get("inconclusive") or []),
                                 *(f"{v.name}.{m}" for m in got.get("inconclusive") or [])]
        mine_cmp = config.stash.get(COMPARISONS_KEY, {}).get(summary.suite)
        if mine_cmp is not None:
            renamed = [dataclasses.replace(r, gate=dataclasses.replace(r.gate, metric=f"{v.name}.{r.gate.metric}"))
                       for r in mine_cmp.gates]
            if overall is None:
                overall = dataclasses.replace(mine_cmp, gates=[])
            overall.gates = [*overall.gates, *renamed]
    if overall is not None:
        config.stash.setdefault(COMPARISONS_KEY, {})[summary.suite] = overall
    if block is not None:
        summary.sections["baseline"] = block
    return True
