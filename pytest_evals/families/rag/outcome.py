"""What one metric produced on one case: its runs (``n_runs``), their mean and spread.

As in GOV.UK Chat's evaluation, the score is the mean of the runs that succeeded; a run
that could not be scored (0/0, an unparseable judge reply, a failed request) is counted
and shown (in the case's message, its details and the suite's ``failed_runs``), never
hidden. Only a metric with no successful run at all is an error for the case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_evals.model.errors import ErrorKind
from pytest_evals.stats import intervals as stats

#: Scores are compared with thresholds up to float noise (4/5 averaged over runs is not
#: always exactly 0.8).
THRESHOLD_TOLERANCE = 1e-9


@dataclass
class RunOutcome:
    """One judgement: the score, the judge's reasoning and the verdicts it came from."""

    score: float
    reason: str
    #: The intermediate verdicts: statements, claims/truths, needs, TP/FP/FN facts, rubric.
    verdicts: dict[str, Any]
    #: Verdict tallies the score was computed from (e.g. {"yes": 3, "no": 1, "idk": 0}).
    counts: dict[str, int]
    cached: bool = False
    model: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "reason": self.reason,
            "counts": self.counts,
            "verdicts": self.verdicts,
            "cached": self.cached,
            "model": self.model,
        }


@dataclass
class RunError:
    """A run that produced no score; ``message`` starts with the metric's name."""

    repeat: int
    kind: ErrorKind
    message: str
    raw_reply: str | None = None


@dataclass
class MetricOutcome:
    name: str
    threshold: float
    runs: list[RunOutcome] = field(default_factory=list)
    errors: list[RunError] = field(default_factory=list)
    #: Which judge produced it: "llm" or "offline" (embedding baseline).
    judge: str = "llm"
    #: bias: the case passes when the score is at most the threshold.
    lower_is_better: bool = False
    #: How the runs decide the case: "mean" (the mean score against the threshold,
    #: GOV.UK's rule) or "majority" (more than half of the runs pass).
    combine: str = "mean"

    @property
    def failed(self) -> bool:
        return not self.runs

    @property
    def score(self) -> float | None:
        if self.failed:
            return None
        return sum(r.score for r in self.runs) / len(self.runs)

    @property
    def std(self) -> float | None:
        """Sample standard deviation over runs (None with a single run)."""
        if self.failed or len(self.runs) < 2:
            return None
        return stats.std([r.score for r in self.runs], ddof=1)

    def _meets(self, score: float) -> bool:
        if self.lower_is_better:
            return score <= self.threshold + THRESHOLD_TOLERANCE
        return score >= self.threshold - THRESHOLD_TOLERANCE

    @property
    def runs_passed(self) -> int:
        return sum(1 for r in self.runs if self._meets(r.score))

    @property
    def majority_passed(self) -> bool | None:
        """More than half of the successful runs met the threshold (a tie does not)."""
        if self.failed:
            return None
        return 2 * self.runs_passed > len(self.runs)

    @property
    def mean_passed(self) -> bool | None:
        score = self.score
        return None if score is None else self._meets(score)

    @property
    def passed(self) -> bool | None:
        return self.majority_passed if self.combine == "majority" else self.mean_passed

    @property
    def reason(self) -> str:
        """The reasoning behind the lowest-scoring run: the one a reviewer needs first."""
        if not self.runs:
            return ""
        worst = max if self.lower_is_better else min
        return worst(self.runs, key=lambda r: r.score).reason

    def error_message(self) -> str:
        if not self.errors:
            return f"{self.name}: no run produced a score"
        first = self.errors[0]
        runs = "" if len(self.errors) == 1 else f" ({len(self.errors)} runs failed)"
        return f"{first.message}{runs}"

    def light(self) -> dict[str, Any]:
        """What aggregation needs (kept in memory on the controller for every case)."""
        return {
            "score": self.score,
            "std": self.std,
            "runs": [r.score for r in self.runs],
            "threshold": self.threshold,
            "passed": self.passed,
            "error": str(self.errors[0].kind) if self.errors and not self.runs else None,
            "failed_runs": len(self.errors),
            "lower_is_better": self.lower_is_better,
            "combine": self.combine,
            "mean_passed": self.mean_passed,
            "runs_passed": self.runs_passed,
            "majority_passed": self.majority_passed,
        }

    def details(self) -> dict[str, Any]:
        """What a reviewer reads: every run's reasoning and verdicts, every error."""
        return {
            **self.light(),
            "judge": self.judge,
            "runs": [r.to_json() for r in self.runs],
            "errors": [
                {"repeat": e.repeat, "kind": str(e.kind), "message": e.message, "raw_reply": e.raw_reply}
                for e in self.errors
            ],
        }
