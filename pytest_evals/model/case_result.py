"""The per-case result: plain JSON data that rides on the test report.

xdist replays worker reports on the controller, so everything aggregation needs must be
on the report itself. ``data`` holds what the task's aggregation reads (small), and
``details`` what a reviewer reads (prompts, replies, reasoning); the session spools
details to disk and keeps only the light part in memory, so 35,000 cases stay cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_evals.model.errors import ErrorKind

Status = Literal["passed", "failed", "error", "skipped"]

#: Name of the attribute set on ``TestReport`` objects (survives xdist serialisation).
REPORT_ATTR = "evals_result"


@dataclass
class CaseResult:
    suite: str
    task: str
    case_id: str
    source: str
    #: Position of the case in its suite (stable order for aggregation and reports).
    index: int = 0
    status: Status = "passed"
    #: Headline numbers of this case (metric name -> score or None when undefined).
    scores: dict[str, float | None] = field(default_factory=dict)
    #: What the task's aggregation needs (labels, verdicts, per-metric values).
    data: dict[str, Any] = field(default_factory=dict)
    #: A short hash of the case's input fields (not its outputs), None when the input
    #: was never read: a regression baseline pairs a case only with equal inputs. Kept
    #: before ``details``: the reader of earlier runs parses the fields before it.
    fingerprint: str | None = None
    #: What a reviewer needs: inputs, expected/actual, judge prompts, replies, reasons.
    details: dict[str, Any] = field(default_factory=dict)
    message: str | None = None
    #: Why an erroring (or skipped) case has no verdict; None for a scored case.
    error_kind: ErrorKind | None = None
    #: Per-case model usage: requests, cache_hits, prompt_tokens, completion_tokens, cost.
    usage: dict[str, float] = field(default_factory=dict)
    duration: float = 0.0

    def to_json(self) -> dict[str, Any]:
        # Fields already hold plain JSON values; a shallow copy is enough (asdict's
        # recursive deep copy cost more than the rest of the item's bookkeeping). The
        # kind becomes its plain text: reports cross to the controller through execnet,
        # which serialises only plain types.
        out = dict(self.__dict__)
        if self.error_kind is not None:
            out["error_kind"] = str(self.error_kind)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseResult:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        if known.get("error_kind") is not None:
            known["error_kind"] = ErrorKind.of(known["error_kind"])
        return cls(**known)

    def light(self) -> CaseResult:
        """The same result without ``details`` (what the controller keeps in memory)."""
        copy = CaseResult(**{**self.__dict__, "details": {}})
        return copy
