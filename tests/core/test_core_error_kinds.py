"""Error kinds: an enum whose members are the words the files and gates always used."""

from __future__ import annotations

import json

import pytest

from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import (
    CaseInputError,
    ErrorKind,
    EvalsError,
    InfrastructureError,
    JudgeError,
    SkipCase,
    TargetError,
    error_kind,
)


def test_members_are_the_documented_words() -> None:
    assert {k.value for k in ErrorKind} == {
        "config", "input", "infrastructure", "target", "judge", "metric", "timeout", "skipped", "skipped_by_pytest",
        "exception", "context_length", "judge_truncated",
    }
    assert ErrorKind.INPUT == "input" and f"errors_{ErrorKind.INPUT}" == "errors_input"
    assert json.dumps({"k": ErrorKind.JUDGE}) == '{"k": "judge"}'


@pytest.mark.parametrize(("exc", "kind"), [
    (CaseInputError("x"), ErrorKind.INPUT),
    (InfrastructureError("x"), ErrorKind.INFRASTRUCTURE),
    (TargetError("x"), ErrorKind.TARGET),
    (JudgeError("x"), ErrorKind.JUDGE),
    (SkipCase("x"), ErrorKind.SKIPPED),
    (EvalsError("x"), ErrorKind.EXCEPTION),
    (ValueError("x"), ErrorKind.EXCEPTION),
])
def test_an_exception_is_counted_in_its_kind(exc: BaseException, kind: ErrorKind) -> None:
    assert error_kind(exc) is kind


def test_a_kind_given_as_text_or_unknown_is_a_member() -> None:
    class Legacy(InfrastructureError):
        kind = "infrastructure"  # type: ignore[assignment]

    class Odd(EvalsError):
        kind = "no-such-kind"

    assert error_kind(Legacy("x")) is ErrorKind.INFRASTRUCTURE
    assert error_kind(Odd("x")) is ErrorKind.EXCEPTION


def test_results_carry_plain_text_and_read_back_members() -> None:
    result = CaseResult(suite="s", task="t", case_id="c", source="f:1", status="error", error_kind=ErrorKind.JUDGE)
    data = result.to_json()
    # Plain str, not the enum: execnet (xdist) serialises only exact builtin types.
    assert type(data["error_kind"]) is str and data["error_kind"] == "judge"
    assert result.error_kind is ErrorKind.JUDGE  # to_json copies, the result keeps its member
    back = CaseResult.from_json(json.loads(json.dumps(data)))
    assert back.error_kind is ErrorKind.JUDGE
    assert CaseResult.from_json({**data, "error_kind": None}).error_kind is None
