"""Reading the judge's Yes/No.

``first`` (seed 003, the default): the first whole word "yes" or "no", in any case,
decides; a reply with neither counts as "No" (conservative) and is flagged
unparseable. Whole words only, so "Not", "Nothing" or "Yesterday" decide nothing.

``strict`` (the official evaluation script's rule): a reply containing both words or
neither is wrong whatever the truth; it is flagged unparseable and has no prediction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ParseMode = Literal["first", "strict"]
Verdict = Literal["yes", "no"]

YES_NO_PATTERN = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Judgement:
    #: "yes" = the judge says the output hallucinates; None = no usable verdict (strict).
    predicted: Verdict | None
    #: Neither word found (both modes), or both found (strict).
    unparseable: bool
    #: Both words occur (the first one decided in ``first`` mode).
    ambiguous: bool

    def correct(self, expected: Verdict) -> bool:
        return self.predicted == expected


def parse_judgement(reply: str, mode: ParseMode = "first") -> Judgement:
    found = [m.group(1).lower() for m in YES_NO_PATTERN.finditer(reply)]
    kinds = set(found)
    ambiguous = len(kinds) == 2
    if not found:
        return Judgement("no" if mode == "first" else None, True, False)
    if mode == "strict" and ambiguous:
        return Judgement(None, True, True)
    first: Verdict = "yes" if found[0] == "yes" else "no"
    return Judgement(first, False, ambiguous)
