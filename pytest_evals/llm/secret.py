"""The API key: held in one object whose repr never shows it, and scrubbed from text.

Creating a :class:`Secret` registers its value with the process-wide redaction layer
(:mod:`pytest_evals.hardening.redaction`), so every text that leaves the process is masked, not
only the messages this layer builds.
"""

from __future__ import annotations

from pytest_evals.hardening import redaction as _redact

MASK = _redact.MASK


class Secret:
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value
        _redact.register(value)

    def reveal(self) -> str:
        """The key itself: only for building the Authorization header."""
        return self._value

    def redact(self, text: str) -> str:
        # Every registered secret, not only this one: a server may quote any header.
        return _redact.redact(text)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"

    __str__ = __repr__

    def __reduce__(self) -> tuple[object, ...]:
        # Pickling (xdist, caches) must never carry the key anywhere.
        raise TypeError("Secret values cannot be pickled")


def redact(text: str, secret: Secret | None = None) -> str:
    return _redact.redact(text)
