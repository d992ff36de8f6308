"""Error types that decide how a case is reported.

A case that cannot be evaluated is an ERROR, never a silent pass or a zero: bad input,
an LLM call that failed after its retries, or a judge reply that cannot be parsed each
have their own type so the summary can count them apart.
"""

from __future__ import annotations


class EvalsError(Exception):
    """Base class of every pytest_evals error."""


class SuiteConfigError(EvalsError):
    """A suite file is unusable as a whole (bad YAML, unknown task, bad field)."""


class CaseInputError(EvalsError):
    """One case's input is bad. The message names the file, line and field."""

    kind = "input"


class InfrastructureError(EvalsError):
    """A model endpoint, target command or network call failed after its retries."""

    kind = "infrastructure"


class JudgeError(EvalsError):
    """A judge replied but its reply cannot be turned into a score (or the score is 0/0)."""

    kind = "judge"

    def __init__(self, message: str, raw_reply: str | None = None) -> None:
        super().__init__(message)
        self.raw_reply = raw_reply


class TargetError(InfrastructureError):
    """The system under test (generate: true) failed or produced unusable output."""

    kind = "target"


class SkipCase(EvalsError):
    """The case is deliberately not evaluated (e.g. a dry run that only estimates cost)."""

    kind = "skipped"


def error_kind(exc: BaseException) -> str:
    """The summary bucket an exception is counted in."""
    return getattr(exc, "kind", "exception")
