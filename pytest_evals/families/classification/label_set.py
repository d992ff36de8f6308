"""A suite's declared labels: checking them, naming them, reading them from data and replies.

Labels are JSON scalars: text (``escalate``), booleans or whole numbers. A value in the
data is one of the labels only when it is the same value of the same type: ``"true"`` is
not ``true``, ``"Escalate"`` is not ``"escalate"``; a data set that mixes them has an
error to fix, not a guess to score. Each label has a *key*, its text in metric paths and
tables (``per_class.escalate.recall``; ``true``/``false`` for booleans).

A target's reply (a model's text) is read more leniently, since a model answers in
words: the reply that is a label once quotes, case and final punctuation are set aside,
or, failing that, that names exactly one label as a word.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Label values a suite may declare.
Label = str | bool | int

#: Reply words read as booleans, when the labels are ``true``/``false``.
_YES = frozenset({"true", "yes", "1", "y"})
_NO = frozenset({"false", "no", "0", "n"})
#: A verdict word in a sentence (whole words only: "Not", "Nothing", "Yesterday" are none).
VERDICT_WORD = re.compile(r"(?<!\w)(yes|no|true|false)(?!\w)", re.IGNORECASE)
#: Words a YAML 1.1 loader reads as booleans in a suite file.
_YAML_BOOLEANS = frozenset({"yes", "no", "on", "off", "true", "false", "y", "n"})


#: Characters of a value a message quotes (a data error must not repeat a megabyte).
SHOWN_CHARS = 200
#: Labels a message lists before it says how many more there are.
LISTED_LABELS = 20


def show(label: Any) -> str:
    """A label as messages print it: ``'escalate'``, ``true``, ``3``."""
    if isinstance(label, str):
        return repr(label if len(label) <= SHOWN_CHARS else label[:SHOWN_CHARS] + "...")
    text = json.dumps(label, default=str)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


def key_of(label: Label) -> str:
    """A label's text in metric paths and tables."""
    return json.dumps(label) if isinstance(label, bool) else str(label)


def kind_of(value: Any) -> str:
    """A JSON value's type, as a user reads it."""
    if value is None:
        return "null"
    names = {bool: "a JSON boolean", int: "a JSON number", float: "a JSON number", str: "text",
             list: "a JSON list", dict: "a JSON object"}
    return names.get(type(value), type(value).__name__)


def declared_problem(labels: Sequence[Any]) -> str | None:
    """Why a suite's ``labels`` cannot be used, or None."""
    if not isinstance(labels, list) or len(labels) < 2:
        return "declare at least two labels, e.g. labels: [escalate, answer, refuse]"
    seen: dict[str, int] = {}
    for i, label in enumerate(labels):
        if isinstance(label, float) or not isinstance(label, (str, bool, int)):
            return f"labels[{i}]: a label is text, true/false or a whole number, got {label!r} ({kind_of(label)})"
        if isinstance(label, str) and not label.strip():
            return f"labels[{i}]: a label cannot be empty"
        key = key_of(label)
        if key in seen:
            return f"labels[{i}]: {show(label)} is declared twice (first as labels[{seen[key]}])"
        seen[key] = i
    return None


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same JSON type (``True == 1`` in Python, not in a label)."""
    return type(a) is type(b) and a == b


@dataclass(frozen=True)
class LabelSet:
    labels: tuple[Label, ...]

    @property
    def keys(self) -> list[str]:
        return [key_of(label) for label in self.labels]

    def listed(self) -> str:
        shown = ", ".join(show(label) for label in self.labels[:LISTED_LABELS])
        more = len(self.labels) - LISTED_LABELS
        return shown + (f" ... ({more} more)" if more > 0 else "")

    def find(self, value: Any) -> Label | None:
        return next((label for label in self.labels if _same(label, value)), None)

    def from_data(self, value: Any, field: str) -> str:
        """The key of a data value, or ValueError saying what is wrong with it."""
        label = self.find(value)
        if label is not None:
            return key_of(label)
        hint = ""
        if isinstance(value, str):
            close = [show(x) for x in self.labels if isinstance(x, str) and x.strip().lower() == value.strip().lower()]
            hint = f" (labels are case- and space-sensitive: did you mean {close[0]}?)" if close else ""
            if not close and any(isinstance(x, bool) for x in self.labels):
                hint = " (the labels are JSON booleans: write true or false without quotes"
                if value.strip().lower() in _YAML_BOOLEANS:
                    # YAML 1.1 reads yes/no/on/off as booleans: labels: [yes, no] are not text.
                    hint += f", or quote the labels in the suite (labels: ['{value}', ...]) if they are text"
                hint += ")"
        elif isinstance(value, bool) and any(isinstance(x, str) and x.lower() == json.dumps(value) for x in self.labels):
            hint = " (the labels are text: quote it)"
        shown = show(value)
        kind = "" if value is None else f" ({kind_of(value)})"
        raise ValueError(f"field {field!r}: {shown}{kind} is not one of the labels {self.listed()}{hint}")

    def from_reply(self, value: Any) -> str:
        """The key of the label a target returned or a model replied, or ValueError."""
        label = self.find(value)
        if label is not None:
            return key_of(label)
        if not isinstance(value, str):
            raise ValueError(f"returned {show(value)} ({kind_of(value)}), not one of the labels {self.listed()}")
        text = value.strip().strip("`'\"*").strip().rstrip(".!").strip().strip("`'\"*").strip()
        folded = text.casefold()
        for label in self.labels:
            if isinstance(label, bool):
                words = _YES if label else _NO
                if folded in words:
                    return key_of(label)
            elif key_of(label).casefold() == folded:
                return key_of(label)
        if any(isinstance(label, bool) for label in self.labels):
            # A sentence from a Yes/No model: its first whole word yes/no/true/false
            # decides, as HaluEval's lenient rule reads a judge ("I can only respond with
            # one word: yes" is a yes); a reply with neither has no verdict.
            first = VERDICT_WORD.search(value)
            if first is not None:
                said = first.group(1).casefold() in _YES
                if said in self.labels:
                    return key_of(said)
            if all(isinstance(label, bool) for label in self.labels):
                raise ValueError(f"replied {show(value)}, which has no yes/no (or true/false) word; "
                                 f"expected one of {self.listed()}")
        # A sentence: the labels it names as words (a reply naming two is ambiguous).
        named = [label for label in self.labels if not isinstance(label, bool)
                 and re.search(rf"(?<!\w){re.escape(key_of(label).casefold())}(?!\w)", value.casefold())]
        if len(named) == 1:
            return key_of(named[0])
        if named:
            raise ValueError(f"replied {show(value)}, which names several labels ({', '.join(show(x) for x in named)}); "
                             f"expected one of {self.listed()}")
        raise ValueError(f"replied {show(value)}, which names none of the labels {self.listed()}")
