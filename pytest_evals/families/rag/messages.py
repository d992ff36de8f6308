"""The text a reviewer sees for a failed or erroring case: every metric, its score, its
threshold and the judge's reason, failing metrics first."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_evals.families.rag.outcome import MetricOutcome

#: Judge reasons are cut to this many characters in the one-screen message (the report
#: keeps them whole).
REASON_CHARS = 400


def _short(text: str, limit: int = REASON_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def metric_line(outcome: MetricOutcome) -> str:
    if outcome.failed:
        # error messages start with the metric's name
        return f"ERROR {outcome.error_message()}"
    score = outcome.score
    assert score is not None
    mark = "ok  " if outcome.passed else "FAIL"
    # The sign compares the mean with the threshold; under "majority" the runs decide.
    if outcome.lower_is_better:
        sign = "<=" if outcome.mean_passed else ">"
    else:
        sign = ">=" if outcome.mean_passed else "<"
    spread = ""
    if len(outcome.runs) > 1:
        std = outcome.std or 0.0
        spread = f" (mean of {len(outcome.runs)} runs, std {std:.2f})"
    if outcome.combine == "majority":
        spread += f" [majority: {outcome.runs_passed} of {len(outcome.runs)} runs pass]"
    if outcome.errors:
        spread += f" [{len(outcome.errors)} run(s) failed: {_short(outcome.error_message(), 160)}]"
    line = f"{mark} {outcome.name}: {score:.2f} {sign} threshold {outcome.threshold:.2f}{spread}"
    reason = outcome.reason
    return f"{line} - judge: {_short(reason)}" if reason else line


def case_message(outcomes: Sequence[MetricOutcome]) -> str | None:
    """None when every metric passed; otherwise a headline and one line per metric."""
    errored = [o for o in outcomes if o.failed]
    below = [o for o in outcomes if not o.failed and not o.passed]
    if not errored and not below:
        return None
    if errored:
        head = f"{len(errored)} metric(s) could not be scored: {', '.join(o.name for o in errored)}"
        if below:
            head += f"; below threshold: {', '.join(o.name for o in below)}"
    else:
        head = f"{len(below)} of {len(outcomes)} metric(s) below threshold: {', '.join(o.name for o in below)}"
    ordered = [*errored, *below, *(o for o in outcomes if not o.failed and o.passed)]
    return "\n".join([head, *(f"  {metric_line(o)}" for o in ordered)])
