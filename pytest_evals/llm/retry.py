"""When to retry a failed attempt and how long to wait first."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass

#: HTTP statuses worth another attempt: rate limit, timeouts, conflicts, server errors.
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
#: Statuses that mean "slow down" rather than "broken": they shrink the concurrency.
THROTTLE_STATUS = frozenset({429, 503, 529})


#: How every transport begins the cause of a refused or dropped connection.
CONNECTION_ERROR = "connection error: "


class AttemptError(Exception):
    """One attempt failed; ``retryable`` says whether another attempt may succeed."""

    def __init__(
        self,
        cause: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(cause)
        self.cause = cause
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after

    @property
    def throttled(self) -> bool:
        return self.status in THROTTLE_STATUS

    @property
    def connection(self) -> bool:
        """The request never reached the server or its reply was cut (refused, reset):
        every transport words these ``connection error: ...`` (an HTTP helper process
        passes on only the text)."""
        return self.status is None and self.cause.startswith(CONNECTION_ERROR)


def status_error(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> AttemptError:
    retry_after = parse_retry_after(headers) if headers is not None else None
    return AttemptError(
        f"HTTP {status}: {message}" if message else f"HTTP {status}",
        retryable=status in RETRYABLE_STATUS,
        status=status,
        retry_after=retry_after,
    )


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI) or ``Retry-After`` (seconds or a date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())
    except (ValueError, TypeError, OverflowError):
        # Unparseable: still a 429 (throttling), just without a server-given wait.
        return None


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter; a server's Retry-After wins (within ``max_wait``)."""

    base: float = 0.25
    cap: float = 20.0
    #: Never wait longer than this for one Retry-After (a hard deadline needs a bound).
    max_wait: float = 60.0

    def delay(self, attempt: int, error: AttemptError, rng: random.Random | None = None) -> float:
        rand = (rng or random).random()
        if error.retry_after is not None:
            # A little jitter on top so a crowd told "1 s" does not come back in step.
            return min(self.max_wait, error.retry_after * (1.0 + 0.2 * rand))
        ceiling = min(self.cap, self.base * (2 ** max(0, attempt - 1)))
        # "Equal jitter": at least half the ceiling, so retries do spread out.
        return ceiling / 2 + ceiling / 2 * rand
