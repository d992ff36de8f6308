"""The API key: held in one object whose repr never shows it, and scrubbed from text.

Exceptions from HTTP libraries and servers can quote request headers or the key itself
("Incorrect API key provided: sk-..."). Every message the layer shows or stores passes
through :meth:`Secret.redact` first.
"""

from __future__ import annotations

from urllib.parse import quote

MASK = "***"


class Secret:
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The key itself: only for building the Authorization header."""
        return self._value

    def redact(self, text: str) -> str:
        if not self._value:
            return text
        for form in {self._value, quote(self._value, safe="")}:
            text = text.replace(form, MASK)
        return text

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"

    __str__ = __repr__

    def __reduce__(self) -> tuple[object, ...]:
        # Pickling (xdist, caches) must never carry the key anywhere.
        raise TypeError("Secret values cannot be pickled")


def redact(text: str, secret: Secret | None) -> str:
    return secret.redact(text) if secret is not None else text
