"""Canonical JSON: the bytes the cache keys and input fingerprints hash must be the standard
library's, whatever the value, so caches and baselines written before keep matching."""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from datetime import date
from pathlib import PurePosixPath
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_evals.llm.cache import cache_key
from pytest_evals.model.canonical_json import MAX_DEPTH, canonical_json
from pytest_evals.tasks.input_fingerprint import fingerprint


def reference(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return text.encode("utf-8", "surrogatepass")


# Text with everything JSON escapes or orjson might treat differently: control
# characters, quotes, backslashes, U+2028, DEL, astral characters, lone surrogates.
texts = st.text(
    alphabet=st.one_of(
        st.characters(codec=None, categories=None),
        st.sampled_from(['"', "\\", "\x00", "\x1f", "\x7f", "\u2028", "\ud800", "\udfff", "\U0001f600", "\ufeff"]),
    ),
    max_size=20,
)
floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-4, 9.999999999999999e-05, 1e-05, 1e16, 1e15, 5e-324, 1.5e300, 0.7]),
)
ints = st.one_of(st.integers(), st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1]))
scalars = st.one_of(st.none(), st.booleans(), ints, floats, texts)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(texts, inner, max_size=4),
        # Keys json.dumps turns into text (a mixed-type dict cannot be sorted; skipped).
        st.dictionaries(st.integers(), inner, max_size=3),
    ),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_canonical_json_is_the_standard_librarys_text(value: Any) -> None:
    assert canonical_json(value) == reference(value)


class Label(str):
    pass


class Count(int):
    pass


def test_canonical_json_subclasses_other_types_and_deep_values_take_the_standard_path() -> None:
    cases: list[Any] = [
        {"a": Label("x"), "b": Count(3)},  # orjson would write these; json.dumps writes them too
        {"p": OrderedDict(b=1, a=2)},
        {"when": math.pi, "path": PurePosixPath("/data/x.jsonl"), "at": date(2026, 1, 2)},  # default=str
        {1: "int key", 2: "sorted"},
        {"nan": float("nan"), "inf": float("-inf"), "tiny": 3e-07},
        "\ud83d alone",
        [2**70, -(2**70)],
    ]
    deep: Any = "leaf"
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    cases.append(deep)
    for value in cases:
        assert canonical_json(value) == reference(value), value
    assert b'"path":"/data/x.jsonl"' in canonical_json(cases[2])


def test_hashes_keep_their_values_from_before() -> None:
    """The hashes of two payloads as the earlier code (the standard library's text)
    computed them: a cache or a baseline written by an earlier version still matches."""
    payload = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Is Paris in France? é \u2028 \U0001f600"}],
        "temperature": 0.0,
        "max_tokens": 16,
        "seed": None,
        "top_p": 1e-05,
    }
    assert cache_key(payload) == "55607fb62545794ed10dc5697cd55b382fa1dc8b1b55cbda774631c85dea9465"
    assert fingerprint(payload) == "55607fb62545794e"
    assert cache_key({"k": "\udc80"}) == "0e7c3bb4dfdf4a13865e008c3a87beff7c4153fac89ae13d11f1147431ed45d1"
