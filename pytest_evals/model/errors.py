"""Error types that decide how a case is reported.

A case that cannot be evaluated is an ERROR, never a silent pass or a zero: bad input,
an LLM call that failed after its retries, or a judge reply that cannot be parsed each
have their own type so the summary can count them apart.
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar


class ErrorKind(str, Enum):
    """The bucket an erroring case is counted in (``errors_by_kind``, ``errors_<kind>``).

    A ``str`` enum: a member equals its text and JSON writes it as that text, so result
    files, summaries and gate names (``errors_input``) keep the words they always had.
    """

    #: The suite file is unusable as a whole (its one stand-in result).
    CONFIG = "config"
    #: One case's input is bad (file, line and field named in the message).
    INPUT = "input"
    #: A model endpoint, network call or needed extra failed; also a collected case
    #: whose result never arrived (worker crash, interrupted run).
    INFRASTRUCTURE = "infrastructure"
    #: A request longer than the model's context (the prompt's token count and the
    #: model's limit in the message): the input needs a shorter form, not a retry, and
    #: is counted apart from outages.
    CONTEXT_LENGTH = "context_length"
    #: The system under test (``generate: true``) failed or returned unusable output.
    TARGET = "target"
    #: A judge replied but its reply cannot be turned into a score.
    JUDGE = "judge"
    #: A judge reply cut at the length limit (``finish_reason: length``): half a reply,
    #: never read as a verdict and never sent back; the cure is a larger ``max_tokens``.
    JUDGE_TRUNCATED = "judge_truncated"
    #: A reference metric cannot run with these parameters or this environment.
    METRIC = "metric"
    #: A reference metric did not finish within its deadline.
    TIMEOUT = "timeout"
    #: The case was deliberately not evaluated (a dry run); its status is ``skipped``.
    SKIPPED = "skipped"
    #: pytest skipped the case before it was evaluated (a skip mark, ``pytest.skip()`` in
    #: a setup hook): not measured, so its suite is partial; its status is ``skipped``.
    SKIPPED_BY_PYTEST = "skipped_by_pytest"
    #: Anything else: a bug in a task or a user's target (the traceback is kept).
    EXCEPTION = "exception"

    def __str__(self) -> str:
        # f-strings and str() give the word, as for a plain string (Python 3.11 changed
        # a mixed-in enum's format() to "ErrorKind.INPUT").
        return self.value

    @classmethod
    def of(cls, value: object) -> ErrorKind:
        """The member named by ``value`` (a member or its text); EXCEPTION for anything
        else, so a result read back from a file always has a known kind."""
        if isinstance(value, cls):
            return value
        try:
            return cls(value)
        except ValueError:
            return cls.EXCEPTION


class EvalsError(Exception):
    """Base class of every pytest_evals error."""


class SuiteConfigError(EvalsError):
    """A suite file is unusable as a whole (bad YAML, unknown task, bad field)."""


class CaseInputError(EvalsError):
    """One case's input is bad. The message names the file, line and field."""

    kind: ClassVar[ErrorKind] = ErrorKind.INPUT


class InfrastructureError(EvalsError):
    """A model endpoint, target command or network call failed after its retries."""

    kind: ClassVar[ErrorKind] = ErrorKind.INFRASTRUCTURE


class JudgeError(EvalsError):
    """A judge replied but its reply cannot be turned into a score (or the score is 0/0)."""

    kind: ClassVar[ErrorKind] = ErrorKind.JUDGE

    def __init__(self, message: str, raw_reply: str | None = None) -> None:
        super().__init__(message)
        self.raw_reply = raw_reply


class JudgeTruncatedError(JudgeError):
    """A judge reply was cut at the length limit before it said what it was asked."""

    kind: ClassVar[ErrorKind] = ErrorKind.JUDGE_TRUNCATED


class TargetError(InfrastructureError):
    """The system under test (generate: true) failed or produced unusable output."""

    kind = ErrorKind.TARGET


class SkipCase(EvalsError):
    """The case is deliberately not evaluated (e.g. a dry run that only estimates cost)."""

    kind: ClassVar[ErrorKind] = ErrorKind.SKIPPED


def error_kind(exc: BaseException) -> ErrorKind:
    """The summary bucket an exception is counted in (its ``kind``, else EXCEPTION)."""
    return ErrorKind.of(getattr(exc, "kind", ErrorKind.EXCEPTION))
