"""Reading Yes/No from judge replies, in the three parse modes."""

from __future__ import annotations

import pytest

from pytest_evals.families.halueval.parsing import Judgement, parse_judgement


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


def official_verdict(reply: str) -> str:
    """evaluate.py's branch for one reply, written out independently of the package."""
    ans = reply.replace(".", "")
    if ("Yes" in ans and "No" in ans) or ("Yes" not in ans and "No" not in ans):
        return "failed!"
    return "Yes" if "Yes" in ans else "No"


REPLIES = [
    "Yes", "No", "Yes.", "No.", "yes", "no", "YES", "NO", "Not hallucinated", "Nope",
    "Yes, no doubt", "No... wait, Yes", "I cannot tell", "", "Y.e.s", "N.o.", "Noted: Yes",
    "Yesterday", "#Your Judgement#: No", "The answer is: yes.", "Nothing", " No ",
]


@pytest.mark.parametrize("reply", REPLIES)
def test_official_mode_is_the_official_branch(reply: str) -> None:
    j = parse_judgement(reply, "official")
    verdict = official_verdict(reply)
    assert j.predicted == {"Yes": "yes", "No": "no", "failed!": None}[verdict]
    assert j.unparseable == (verdict == "failed!")


def test_official_mode_differs_from_ours_where_the_issue_says() -> None:
    # lower/upper case: a verdict for us, a failure there
    for reply in ("yes", "YES"):
        assert parse_judgement(reply, "strict").predicted == "yes"
        assert parse_judgement(reply, "official").predicted is None
    # substrings: a "No" there, unparseable for us
    for reply in ("Not hallucinated", "Nope"):
        assert parse_judgement(reply, "official").predicted == "no"
        assert parse_judgement(reply, "strict").unparseable
    # dots are removed before the test: "Y.e.s" is a Yes there
    assert parse_judgement("Y.e.s", "official").predicted == "yes"
    assert parse_judgement("Y.e.s", "strict").predicted is None
