"""Canonical JSON bytes: sorted keys, no spaces, non-ASCII characters as themselves.

The response cache's keys and the cases' input fingerprints are hashes of this text, and
both must stay what they were: a cache written by an earlier version keeps answering, a
baseline's fingerprints keep pairing. So the bytes are exactly those of
``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
default=str)`` encoded as UTF-8 (``surrogatepass``).

Every case hashes its request and its input (three texts of a few kilobytes); the
standard library's encoder spent about 15 us on each, orjson about 1 us. orjson writes
the same bytes for the values it is given here, checked first: dicts with ``str`` keys,
lists, tuples, ``str``, ``int``, ``bool``, ``None``, and floats that both spell alike
(``repr`` and orjson differ below 1e-4, where repr switches to an exponent, and on NaN
and infinities, which orjson writes as null). Anything else (subclasses, other key types,
other floats, nesting deeper than :data:`MAX_DEPTH`) and anything orjson refuses (a lone
surrogate, an int beyond 64 bits) goes to the standard library. Keys sort alike: Python
compares code points, orjson UTF-8 bytes, and the two orders are the same.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

#: Nesting checked before handing a value to orjson (its own limit is 254).
MAX_DEPTH = 200

# Floats whose repr has no exponent and is finite: orjson writes them the same way.
_SMALLEST_PLAIN = 1e-4


def canonical_json(value: Any) -> bytes:
    """``value`` as canonical JSON, UTF-8 encoded (lone surrogates passed through)."""
    if _orjson_safe(value, 0):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except (TypeError, ValueError):  # orjson.JSONEncodeError: surrogates, big ints
            pass
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return text.encode("utf-8", "surrogatepass")


def _orjson_safe(value: Any, depth: int) -> bool:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return value == 0.0 or (abs(value) >= _SMALLEST_PLAIN and not math.isinf(value))
    if depth >= MAX_DEPTH:
        return False
    if kind is dict:
        for key, item in value.items():
            # Strings inline: most values are, and a call per value was most of the cost.
            if type(key) is not str or (type(item) is not str and not _orjson_safe(item, depth + 1)):
                return False
        return True
    if kind is list or kind is tuple:
        for item in value:
            if type(item) is not str and not _orjson_safe(item, depth + 1):
                return False
        return True
    return False
