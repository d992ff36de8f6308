"""The verdict of a suite with variants: each variant summarised as a suite of its own,
then put side by side.

Each variant's results (the items ``case[name]``) are summarised exactly as a run of
that variant alone would be (:func:`~pytest_evals.controller.suite_verdict.suite_summary`
with the variant's task and configuration: same metrics, intervals, gates and case
verdict rules). The suite's entry holds them side by side: ``metrics`` is a tree with
one branch per variant (``mini.accuracy``: what ``thresholds`` gates and JUnit names),
``gates`` are every variant's gates on those paths, the verdict fails for any
variant's reason (named ``variant mini: ...``), and the ``variants`` section carries
each variant's counts, usage (requests, tokens, cost, latency) and overrides. With
``per_variant: false`` only the reference variant is gated; the others are measured
and compared, and fail the suite only for problems (cases that never reported, a
failed aggregation).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_evals.controller.suite_verdict import (
    CaseCounts,
    Population,
    Reason,
    ReasonKind,
    SuiteSummary,
    apply_population,
    is_missing,
    suite_summary,
    verdict,
)
from pytest_evals.model.metric_value import tree_to_json

if TYPE_CHECKING:
    from pytest_evals.collection.variant_items import VariantTask
    from pytest_evals.model.case_result import CaseResult
    from pytest_evals.suites.suite_config import Suite

#: The suite entry's section holding the variants (the schema names it).
SECTION = "variants"


def variant_population(
    population: Population | None,
    n_variants: int,
    name: str,
    selected: Sequence[str],
    not_run: Sequence[str],
    xfail: Mapping[str, str],
    results: Sequence[CaseResult],
) -> Population | None:
    """One variant's share of the suite's population: its file defines the same cases
    for every variant; ``-k`` may select some variants' items and not others."""
    if population is None:
        return None
    suffix = f"[{name}]"
    mine_selected = sum(1 for n in selected if n.endswith(suffix))
    total_selected = len(selected)
    collected_total = total_selected + population.deselected
    collected = collected_total // n_variants if n_variants else 0
    outcomes = [xfail.get(f"{r.suite}::{r.case_id}") for r in results]
    return Population(
        defined=population.defined // n_variants if population.defined is not None else None,
        deselected=max(0, collected - mine_selected) if selected else 0,
        sampled_out=population.sampled_out // n_variants,
        sampled=population.sampled,
        not_run=sum(1 for n in not_run if n.endswith(suffix)),
        xfailed=outcomes.count("xfailed"),
        xpassed=outcomes.count("xpassed"),
        xfailed_failures=sum(1 for r, o in zip(results, outcomes, strict=True) if o == "xfailed" and r.status == "failed"),
    )


def usage_of(results: Sequence[CaseResult]) -> dict[str, Any]:
    """Requests, cache hits, tokens and cost summed over a variant's cases (``cost``
    covers the priced requests, ``unpriced_requests`` counts the others; None when no
    request had a price), and the
    latency of its cases (seconds from start to result: the model's time when the
    answer was not cached)."""
    out: dict[str, Any] = {}
    for key in ("requests", "cache_hits", "prompt_tokens", "completion_tokens", "cost", "errors",
                "unpriced_requests"):
        total = sum(float(r.usage.get(key, 0) or 0) for r in results)
        out[key] = round(total, 6) if key == "cost" else int(total)
    if out["unpriced_requests"] and not out["cost"]:
        # Every answered request had an unknown price: the cost is unknown, not $0.
        out["cost"] = None
    durations = [r.duration for r in results if r.status in ("passed", "failed") and r.duration]
    if durations:
        out["latency_mean_s"] = round(statistics.fmean(durations), 4)
        out["latency_median_s"] = round(statistics.median(durations), 4)
    return out


def _prefixed(gate: Any, name: str) -> Any:
    return dataclasses.replace(gate, metric=f"{name}.{gate.metric}")


def variant_suite_summary(
    suite: Suite,
    task: VariantTask,
    results: list[CaseResult],
    strict: bool,
    accounted: bool,
    *,
    population: Population | None,
    allow_partial: bool,
    selected: Sequence[str] = (),
    not_run: Sequence[str] = (),
    xfail: Mapping[str, str] | None = None,
) -> SuiteSummary:
    """The suite's summary (see the module docstring); ``selected``: node ids of the
    suite's selected items, ``not_run``: those the run stopped before."""
    spec = task.spec
    names = [v.name for v in task.variants]
    by_variant: dict[str, list[CaseResult]] = {n: [] for n in names}
    other: list[CaseResult] = []
    for r in results:
        name = task.variant_of(r)
        (by_variant[name] if name is not None else other).append(r)
    counts = CaseCounts.of(results)
    if accounted:
        missing = sum(1 for r in results if is_missing(r))
        counts.expected, counts.received = counts.total, counts.total - missing
    if population is not None:
        apply_population(counts, population)
    metrics: dict[str, Any] = {}
    tables: dict[str, Any] = {}
    gates = []
    problems: list[str] = [r.message for r in other if r.message]
    reasons: list[Reason] = [Reason(ReasonKind.PROBLEM, p) for p in problems]
    warnings: list[str] = []
    block: dict[str, Any] = {"reference": spec.reference_name, "names": names, "per_variant": spec.per_variant,
                             "variants": {}}
    # Variants whose gates decide the suite, split by whether any of their items ran.
    gated_run: list[str] = []
    gated_unrun: list[str] = []
    for v in task.variants:
        mine = by_variant[v.name]
        pop = variant_population(population, len(names), v.name, selected, not_run, xfail or {}, mine)
        s = suite_summary(v.suite, v.task, mine, strict, accounted, population=pop, allow_partial=True)
        metrics[v.name] = s.metrics
        if s.tables:
            tables[v.name] = s.tables
        gates += [_prefixed(g, v.name) for g in s.gates]
        problems += [f"variant {v.name}: {p}" for p in s.problems if mine]
        warnings += [f"variant {v.name}: {w}" for w in s.warnings]
        # A variant none of whose items ran (-k on another variant) is not part of this run,
        # as a suite whose cases are all deselected is not: the partial verdict says so.
        required = spec.per_variant or v.name == spec.reference_name
        gated = bool(mine) and required
        for reason in s.reasons:
            if gated or (mine and reason.kind == ReasonKind.PROBLEM):
                reasons.append(Reason(reason.kind, f"variant {v.name}: {reason.text}"))
        if required and s.gates:
            (gated_run if mine else gated_unrun).append(v.name)
        block["variants"][v.name] = {
            "overrides": v.spec.overrides(),
            "reference": v.name == spec.reference_name,
            "gated": gated,
            "cases": s.cases.to_json(),
            "metrics": tree_to_json(s.metrics),
            "gates": [g.to_json() for g in s.gates],
            "passed": s.passed,
            "reasons": [str(r) for r in s.reasons],
            "usage": usage_of(mine),
        }
    if gated_unrun and not gated_run:
        # A selection (-k, --deselect) that left none of the gated variants' items: a pass
        # would speak for variants that were never measured.
        reasons.append(Reason(
            ReasonKind.UNCHECKED_GATES,
            f"no case of the gated variant(s) {', '.join(gated_unrun)} ran, so the suite's gates were not checked",
        ))
    reasons += [r for r in verdict(counts, [], [], False, allow_partial=allow_partial) if r.kind == ReasonKind.PARTIAL]
    config = suite.config.model_dump(mode="json", exclude_defaults=False)
    config.update(spec.model_dump(mode="json", exclude_defaults=True))
    config.setdefault("reference", spec.reference_name)
    config.setdefault("per_variant", spec.per_variant)
    return SuiteSummary(
        suite=suite.nodeid,
        name=suite.name,
        task=suite.config.task,
        what=suite.config.what,
        generate=suite.config.generate,
        config=config,
        cases=counts,
        metrics=metrics,
        tables=tables,
        gates=gates,
        problems=problems,
        reasons=reasons,
        warnings=warnings,
        sections={SECTION: block},
    )
