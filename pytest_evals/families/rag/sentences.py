"""Sentence splitting for the offline (embedding) metrics.

Plain text only (HTML has already been rendered by inscriptis): each line is a unit
(list items, headings), then lines are cut after ``.``, ``!`` or ``?`` when the next word
starts like a sentence. Fragments without a letter or digit (bullets, rules) are dropped, and fragments of one or two words ("Yes.", "No, sorry.") are
joined to the sentence that follows (or precedes, at the end), because on their own
they embed as noise and would count as off-topic statements.
"""

from __future__ import annotations

import re

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[\"'‘“(\[]?[A-Z0-9£$€])")
_BULLET = re.compile(r"^(?:[*\-•–]|\d{1,2}[.)])\s+")
_WORDY = re.compile(r"\w")
_WORDS = re.compile(r"\w+")
#: Fragments with fewer words than this are attached to a neighbouring sentence.
MIN_WORDS = 3


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
    return _join_fragments(sentences)


def _join_fragments(sentences: list[str]) -> list[str]:
    out: list[str] = []
    carry = ""
    for sentence in sentences:
        text = f"{carry} {sentence}" if carry else sentence
        if len(_WORDS.findall(text)) < MIN_WORDS:
            carry = text
            continue
        out.append(text)
        carry = ""
    if carry:
        if out:
            out[-1] = f"{out[-1]} {carry}"
        else:
            out.append(carry)
    return out
