"""Sentence splitting for the offline (embedding) metrics.

Plain text only (HTML has already been rendered by inscriptis): each line is a unit
(list items, headings), then lines are cut after ``.``, ``!`` or ``?`` when the next word
starts like a sentence. Fragments without a letter or digit (bullets, rules) are dropped.
"""

from __future__ import annotations

import re

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[\"'‘“(\[]?[A-Z0-9£$€])")
_BULLET = re.compile(r"^(?:[*\-•–]|\d{1,2}[.)])\s+")
_WORDY = re.compile(r"\w")


def split_sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for line in text.splitlines():
        line = _BULLET.sub("", line.strip())
        if not line:
            continue
        for piece in _SENTENCE_BREAK.split(line):
            piece = piece.strip()
            if _WORDY.search(piece):
                sentences.append(piece)
    return sentences
