"""Word tokenizers that need no downloaded data (NLTK's punkt is data we never require).

``13a`` and ``intl`` are sacreBLEU's (WMT's mteval-v13a and its Unicode variant),
``char`` splits into characters, ``whitespace`` splits on runs of space and ``regex``
keeps runs of word characters and single punctuation marks (Unicode-aware).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Literal

TokenizerName = Literal["13a", "intl", "char", "whitespace", "regex"]
TOKENIZERS: tuple[str, ...] = ("13a", "intl", "char", "whitespace", "regex")
DEFAULT_TOKENIZER: TokenizerName = "13a"

_WORD_OR_PUNCT = re.compile(r"\w+|[^\w\s]")


@cache
def get_tokenizer(name: str) -> Callable[[str], list[str]]:
    if name == "whitespace":
        return str.split
    if name == "regex":
        return _WORD_OR_PUNCT.findall
    if name in ("13a", "intl", "char"):
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
        from sacrebleu.tokenizers.tokenizer_char import TokenizerChar
        from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International

        sacre = {"13a": Tokenizer13a, "intl": TokenizerV14International, "char": TokenizerChar}[name]()
        return lambda text: sacre(text).split()
    raise ValueError(f"unknown tokenizer {name!r}; accepted: {', '.join(TOKENIZERS)}")


def tokenize(text: str, name: str, lowercase: bool = False) -> list[str]:
    return get_tokenizer(name)(text.lower() if lowercase else text)
