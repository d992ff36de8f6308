"""Reading the judge's Yes/No: three named rules.

``first`` (seed 003, the default): the first whole word "yes" or "no", in any case,
decides; a reply with neither counts as "No" (conservative) and is flagged
unparseable. Whole words only, so "Not", "Nothing" or "Yesterday" decide nothing.

``strict`` (ours): the same whole-word, case-insensitive reading, but a reply with both
words or neither has no verdict and is wrong whatever the truth.

``official`` (the official ``evaluation/evaluate.py``, exactly): every "." is removed,
then "Yes" and "No" are looked for as case-sensitive substrings; a reply containing
both or neither has failed and is wrong. So "yes" and "YES" fail there while "Not
hallucinated" and "Nope" are a "No" (the substring "No" occurs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ParseMode = Literal["first", "strict", "official"]
Verdict = Literal["yes", "no"]

YES_NO_PATTERN = re.compile(r"\b(yes|no)\b", re.IGNORECASE)

#: The official rule's pieces: the character it deletes and the substrings it tests.
OFFICIAL_REMOVED = "."
OFFICIAL_YES, OFFICIAL_NO = "Yes", "No"


@dataclass(frozen=True)
class Judgement:
    #: "yes" = the judge says the output hallucinates; None = no usable verdict.
    predicted: Verdict | None
    #: Neither word found (every mode), or both found (strict and official).
    unparseable: bool
    #: Both words occur (the first one decided in ``first`` mode).
    ambiguous: bool

    def correct(self, expected: Verdict) -> bool:
        return self.predicted == expected


def parse_official(reply: str) -> Judgement:
    """The official script's verdict: substring tests after deleting every "."."""
    text = reply.replace(OFFICIAL_REMOVED, "")
    has_yes, has_no = OFFICIAL_YES in text, OFFICIAL_NO in text
    if has_yes and has_no:
        return Judgement(None, True, True)
    if has_yes:
        return Judgement("yes", False, False)
    if has_no:
        return Judgement("no", False, False)
    return Judgement(None, True, False)


def first_word_at_cut(reply: str) -> bool:
    """Whether the first whole-word Yes/No of a reply cut at the length limit is the
    reply's last characters: ``\b`` matches at the end of the text, so "... the answer
    is No" may have been "Nothing" or "None" had the model gone on. Only a word followed
    by a character that ends it (a space, a stop) is known to be whole."""
    match = YES_NO_PATTERN.search(reply)
    return match is not None and match.end() == len(reply)


def parse_judgement(reply: str, mode: ParseMode = "first") -> Judgement:
    if mode == "official":
        return parse_official(reply)
    found = [m.group(1).lower() for m in YES_NO_PATTERN.finditer(reply)]
    ambiguous = len(set(found)) == 2
    if not found:
        return Judgement("no" if mode == "first" else None, True, False)
    if mode == "strict" and ambiguous:
        return Judgement(None, True, True)
    first: Verdict = "yes" if found[0] == "yes" else "no"
    return Judgement(first, False, ambiguous)
