"""The report check ``redaction.dirty`` takes a faster path (the value as JSON text) and
decides as the walk over every string did: never a secret missed, the same scrubbed
values, whatever the secret's characters (ones JSON escapes included)."""

from __future__ import annotations

import dataclasses
import datetime
import functools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_evals.hardening import redaction

SECRETS = [
    "sk-live-0123456789abcdef",
    'pass"word\\with\nescapes',  # every character JSON escapes
    "non-ascii-sécret-✓",
    "tab\tsecret",
]


def walked(value: Any) -> bool:
    """The decision of the walk the fast path replaces."""
    if isinstance(value, str):
        return redaction.needs_scrub(value)
    parts: list[str] = []
    redaction._strings(value, parts)
    return bool(parts) and redaction.needs_scrub("\x00".join(parts))


@pytest.fixture(params=SECRETS)
def secret(request: pytest.FixtureRequest) -> Iterator[str]:
    redaction.clear()
    redaction.register(request.param)
    yield request.param
    redaction.clear()


def texts(secret: str) -> st.SearchStrategy[str]:
    plain = st.text(max_size=12)
    return st.one_of(plain, st.builds(lambda a, b: a + secret + b, plain, plain), st.just("\ud800x"))


@functools.cache  # built once per secret: a fresh recursive strategy per draw is most of the test's time
def values(secret: str) -> st.SearchStrategy[Any]:
    leaves = st.one_of(texts(secret), st.integers(), st.floats(allow_nan=True), st.none(), st.booleans())
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.tuples(inner, inner),
            st.dictionaries(texts(secret), inner, max_size=4),
            st.dictionaries(st.integers(), inner, max_size=2),
        ),
        max_leaves=12,
    )


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_core_dirty_never_misses_and_scrubs_the_same(data: st.DataObject) -> None:
    for secret in SECRETS:
        redaction.clear()
        redaction.register(secret)
        value = data.draw(values(secret))
        if walked(value):
            assert redaction.dirty(value), (secret, value)
        # Whatever path decided, the scrubbed value is the one the walk gives.
        expected = redaction._scrub_obj(value) if walked(value) else value
        assert repr(redaction.scrub_obj(value)) == repr(expected)
    redaction.clear()


@dataclasses.dataclass
class Holder:
    text: str


class Label(str):
    pass


def test_core_dirty_sees_no_more_than_the_walk(secret: str) -> None:
    # Objects the walk does not enter stay unentered (no strings in them for either).
    for value in ([Holder(secret)], {"when": datetime.date(2020, 1, 1)}, [Label(secret)], {"b": b"x"}):
        assert redaction.dirty(value) == walked(value)
    assert redaction.dirty({"reply": f"key {secret} leaked", "n": 1})
    assert not redaction.dirty({"reply": "nothing here\nat all", "n": 1.5})


def test_core_dirty_without_secrets_finds_lone_surrogates() -> None:
    redaction.clear()
    assert redaction.dirty({"a": ["ok", "\udc80"]})
    assert not redaction.dirty({"a": ["ok", "fine\n"]})
