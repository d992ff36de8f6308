"""Reading Yes/No from judge replies, in both parse modes."""

from __future__ import annotations

import pytest

from pytest_evals.halueval.parsing import Judgement, parse_judgement


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Yes", Judgement("yes", False, False)),
        ("no", Judgement("no", False, False)),
        ("NO.", Judgement("no", False, False)),
        ("yEs, it is fabricated", Judgement("yes", False, False)),
        ("**No**", Judgement("no", False, False)),
        ("Judgement: Yes", Judgement("yes", False, False)),
        # "Not" / "Nothing" / "Yesterday" are not verdicts
        ("Not hallucinated", Judgement("no", True, False)),
        ("Nothing wrong; yesterday's facts hold", Judgement("no", True, False)),
        ("It is not. Yes, actually.", Judgement("yes", False, False)),
        # both: the first decides, flagged ambiguous
        ("No... wait, yes", Judgement("no", False, True)),
        ("Yes or No? Yes.", Judgement("yes", False, True)),
        # neither: conservative "No", flagged unparseable
        ("", Judgement("no", True, False)),
        ("I cannot tell.", Judgement("no", True, False)),
    ],
)
def test_first_mode(reply: str, expected: Judgement) -> None:
    assert parse_judgement(reply, "first") == expected


@pytest.mark.parametrize(
    ("reply", "predicted", "unparseable"),
    [
        ("Yes", "yes", False),
        ("no.", "no", False),
        ("No... wait, yes", None, True),
        ("I cannot tell.", None, True),
        ("Not sure", None, True),
    ],
)
def test_strict_mode(reply: str, predicted: str | None, unparseable: bool) -> None:
    j = parse_judgement(reply, "strict")
    assert (j.predicted, j.unparseable) == (predicted, unparseable)


def test_correctness_per_mode() -> None:
    # neither: right under "first" when the truth is No, wrong under "strict" always
    assert parse_judgement("cannot say", "first").correct("no")
    assert not parse_judgement("cannot say", "first").correct("yes")
    assert not parse_judgement("cannot say", "strict").correct("no")
    assert not parse_judgement("cannot say", "strict").correct("yes")
    # both: the first word decides under "first"; always wrong under "strict"
    assert parse_judgement("Yes and no", "first").correct("yes")
    assert not parse_judgement("Yes and no", "strict").correct("yes")
