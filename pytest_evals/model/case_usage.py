"""Per-case model usage, counted through a context variable.

Each case's evaluation runs in its own asyncio task, which copies the current context;
the LLM client adds to whatever :data:`current_usage` holds, so usage is attributed to
the right case even with hundreds of cases in flight.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass


@dataclass
class Usage:
    requests: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: USD of the priced requests only: see unpriced_requests.
    cost: float = 0.0
    errors: int = 0
    #: Answered requests whose model has no known price (not in ``cost``: unknown, not free).
    unpriced_requests: int = 0

    def add(self, other: Usage) -> None:
        for key, value in other.__dict__.items():
            setattr(self, key, getattr(self, key) + value)

    def to_json(self) -> dict[str, float]:
        # Flat numbers: __dict__ rather than asdict(), which deep-copies every field
        # (a third of a cached case's evaluation time).
        return {k: v for k, v in self.__dict__.items() if v}


current_usage: contextvars.ContextVar[Usage | None] = contextvars.ContextVar(
    "pytest_evals_current_usage", default=None
)


def record(**counts: float) -> None:
    """Add counts (requests=1, cache_hits=1, prompt_tokens=...) to the running case, if any."""
    usage = current_usage.get()
    if usage is None:
        return
    for key, value in counts.items():
        setattr(usage, key, getattr(usage, key) + value)
