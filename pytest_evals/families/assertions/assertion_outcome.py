"""What one assertion says about one case, and what it is given to say it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass
class CaseView:
    """The parts of a case the assertions read."""

    output: str
    source: str
    input: str | None = None
    references: list[str] = field(default_factory=list)
    #: The generated case's usage record (``latency_ms``, ``cost``...), None when absent.
    usage: dict[str, Any] | None = None
    #: The field the references were read from, for the error when there are none.
    reference_field: str = "reference"
    #: The suite's ``truncate`` policy and context limit for judged assertions' prompts
    #: (llm/truncation.py).
    truncate: Literal["none", "longest", "skip"] = "none"
    context_tokens: int | None = None


@dataclass
class Outcome:
    """One assertion's verdict on one case."""

    passed: bool
    #: In [0, 1]: the assertion's share of the case's weighted score.
    score: float
    #: The measured value in the assertion's own units (a BLEU, a 1-5 rating, a
    #: latency in ms), None for a plain yes/no check (then ``score`` is 0 or 1).
    value: float | None
    reason: str
    #: What a reviewer needs: the judge's reasons, the scoring mode, the matched text.
    evidence: dict[str, Any] = field(default_factory=dict)


def clamp01(x: float) -> float:
    return 0.0 if x < 0.0 else 1.0 if x > 1.0 else x


def yes_no(passed: bool, reason: str, **evidence: Any) -> Outcome:
    return Outcome(passed, 1.0 if passed else 0.0, None, reason, dict(evidence))
