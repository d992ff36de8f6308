"""Score one case on every configured metric (``n_runs`` times each) and build its result.

How an unscorable metric coexists with the others: the case becomes an ERROR whose
message names the metric that could not be scored (and shows the others' scores), while
every metric that was scored keeps its score in ``data`` for the suite's aggregates. A
case is never passed on the metrics that happened to work. A metric some of whose
``n_runs`` failed is scored on the runs that succeeded (GOV.UK Chat's rule); the failed
runs are named in the message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pytest_evals.families.rag.config import RagMetricSpec
from pytest_evals.families.rag.inputs import MetricInputs
from pytest_evals.families.rag.messages import case_message
from pytest_evals.families.rag.outcome import MetricOutcome, RunError, RunOutcome
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import ErrorKind, InfrastructureError, JudgeError, error_kind

#: (metric name, its spec, repeat index) -> one judgement.
Runner = Callable[[str, RagMetricSpec, int], Awaitable[RunOutcome]]


async def run_metric(
    spec: RagMetricSpec, repeats: int, runner: Runner, judge: str, combine: str = "mean"
) -> MetricOutcome:
    outcome = MetricOutcome(spec.name, spec.effective_threshold, judge=judge,
                            lower_is_better=spec.lower_is_better, combine=combine)
    results = await asyncio.gather(
        *(runner(spec.name, spec, i) for i in range(repeats)), return_exceptions=True
    )
    for i, res in enumerate(results):
        if isinstance(res, (JudgeError, InfrastructureError)):
            message = str(res)
            if not message.startswith(f"{spec.name}:"):
                message = f"{spec.name}: {message}"
            outcome.errors.append(RunError(i, error_kind(res), message, getattr(res, "raw_reply", None)))
        elif isinstance(res, BaseException):
            raise res
        else:
            outcome.runs.append(res)
    return outcome


async def score_case(
    specs: Sequence[RagMetricSpec],
    repeats: int | Mapping[str, int],
    runner: Runner,
    judge: str,
    combine: Mapping[str, str] | None = None,
) -> list[MetricOutcome]:
    """``repeats``: one count for every metric, or per metric name (a ``judge.n_runs``)."""

    def count(name: str) -> int:
        return repeats if isinstance(repeats, int) else repeats[name]

    return list(await asyncio.gather(*(
        run_metric(s, count(s.name), runner, judge, (combine or {}).get(s.name, "mean")) for s in specs
    )))


def fill_result(
    result: CaseResult,
    outcomes: Sequence[MetricOutcome],
    inputs: MetricInputs,
    judge: str,
    judge_name: str,
    extra_details: dict[str, Any] | None = None,
) -> CaseResult:
    result.scores = {o.name: o.score for o in outcomes}
    result.data = {"judge": judge, "metrics": {o.name: o.light() for o in outcomes}}
    result.details = {
        "question": inputs.question,
        "ideal_answer": inputs.ideal_answer or None,
        "llm_answer": inputs.answer,
        "contexts": list(inputs.contexts),
        "judge": judge_name,
        "metrics": {o.name: o.details() for o in outcomes},
        **(extra_details or {}),
    }
    result.message = case_message(outcomes)
    errored = [o for o in outcomes if o.failed]
    partial = [o for o in outcomes if not o.failed and o.errors]
    if partial and not result.message:
        # Passed on the runs that worked: say which runs did not.
        result.message = "\n".join(f"note: {o.name} scored on {len(o.runs)} of {len(o.runs) + len(o.errors)} runs "
                                   f"({o.error_message()})" for o in partial)
    if errored:
        result.status = "error"
        kinds = [e.kind for o in errored for e in o.errors]
        # A failed request says more about the run than a bad reply: report it first.
        result.error_kind = (
            ErrorKind.INFRASTRUCTURE if ErrorKind.INFRASTRUCTURE in kinds else (kinds[0] if kinds else ErrorKind.JUDGE)
        )
    elif any(not o.passed for o in outcomes):
        result.status = "failed"
    else:
        result.status = "passed"
    return result
