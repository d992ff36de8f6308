"""``latency`` and ``cost`` bounds of a generated case.

``generate: true`` records, per case, how long the target took (``latency_ms``) and what
its model requests cost (``cost``, USD at the configured prices; tokens too) in the
case's ``usage`` record, saved with the generated outputs so a re-scored run reads the
same numbers. A case with no usage record (``generate: false`` data without one) cannot
be checked: an input ERROR naming the field, never a pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import Field

from pytest_evals.families.assertions.assertion_outcome import CaseView, Outcome
from pytest_evals.families.assertions.deterministic_checks import AssertionProblem, CommonParams
from pytest_evals.model.errors import CaseInputError


class LatencyParams(CommonParams):
    #: Most milliseconds the target may take for one case.
    max: float = Field(ge=0.0)


class CostParams(CommonParams):
    #: Most USD the target's model requests may cost for one case.
    max: float = Field(ge=0.0)


#: type -> (usage key, unit shown)
FIELDS = {"latency": ("latency_ms", "ms"), "cost": ("cost", "USD")}


@dataclass
class UsageCheck:
    name: str
    kind: str
    limit: float

    async def run(self, view: CaseView, ctx: object) -> Outcome:
        key, unit = FIELDS[self.kind]
        usage = view.usage or {}
        value = usage.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise CaseInputError(
                f"{view.source}: field 'usage.{key}': assertion {self.name!r} ({self.kind}) needs the "
                "case's usage record, made by generate: true (or a 'usage' object in the case)"
            )
        passed = value <= self.limit
        reason = f"{value:.6g} {unit} {'<=' if passed else '>'} {self.limit:g} {unit}"
        return Outcome(passed, 1.0 if passed else 0.0, float(value), reason)


def build_usage(kind: str, p: LatencyParams | CostParams, name: str) -> UsageCheck:
    if not math.isfinite(p.max):
        raise AssertionProblem("max", f"expected a finite number, got {p.max!r}")
    return UsageCheck(name, kind, p.max)


USAGE: dict[str, type[CommonParams]] = {"latency": LatencyParams, "cost": CostParams}
