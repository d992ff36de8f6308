"""Fitting a judge's prompt into the model's context before it is sent.

A suite's ``truncate`` policy says what happens to a case whose prompt (by the
``tokens.py`` estimate, about four characters a token) plus the reply's ``max_tokens``
is longer than the model's context:

- ``none`` (default): it is sent as it is; the endpoint's refusal makes the case an
  ERROR of kind ``context_length`` with the token counts;
- ``longest``: the longest of the case's fields (a summarization document, a long
  context) is cut, with a marker saying how much, until the prompt fits;
- ``skip``: the case is not sent and is recorded as skipped, with the counts.

The context limit is the suite's ``context_tokens``, else what the client learned
from the server (``LLMClient.context_limit`` where it publishes one), else what an
earlier refusal on this endpoint named: the first overflowing case teaches the limit,
is fitted and sent again, and every later case is fitted before it is sent. A fitted
prompt the server still refuses is fitted once more by the server's own count of it.
A case's fitted prompt depends only on the case and the limit (never on which cases came
first), so reruns and xdist workers send, and cache, the same requests.
Each case records what was done (``Truncation.to_json``).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pytest_evals.llm.call_errors import ContextLengthError
from pytest_evals.llm.tokens import estimate_prompt_tokens
from pytest_evals.model.errors import SkipCase

if TYPE_CHECKING:
    from pytest_evals.llm.client import LLMClient

TruncatePolicy = Literal["none", "longest", "skip"]

#: Tokens kept free below the limit: the estimate is four characters a token and real
#: tokenizers differ (a small model's vocabulary spends more tokens on rare words).
SAFETY = 0.85
CUT_MARKER = " [... {cut:,} characters cut to fit the model's context]"
#: llama-cpp-python: "Requested tokens (2300) exceed context window of 2048".
_REQUESTED = re.compile(r"requested (?:tokens )?\(?(\d+)\)?|you requested (\d+) tokens", re.IGNORECASE)


@dataclass(frozen=True)
class Truncation:
    """What the policy did to one case (kept in the case's details and data)."""

    policy: TruncatePolicy
    #: The estimated prompt tokens before, the reply's max_tokens, the limit used.
    prompt_tokens: int
    max_tokens: int
    limit: int
    #: ``longest``: the field cut and its length before and after (characters).
    field: str | None = None
    original_chars: int = 0
    kept_chars: int = 0
    #: The prompt's estimate after the cut.
    fitted_tokens: int | None = None
    #: ``skip`` (or a prompt that no cut can fit): the case was not sent.
    skipped: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "policy": self.policy,
            "prompt_tokens": self.prompt_tokens,
            "max_tokens": self.max_tokens,
            "context_limit": self.limit,
        }
        if self.field is not None:
            data.update(
                field=self.field,
                original_chars=self.original_chars,
                kept_chars=self.kept_chars,
                fitted_tokens=self.fitted_tokens,
            )
        if self.skipped:
            data["skipped"] = True
        return data

    def describe(self) -> str:
        over = (
            f"about {self.prompt_tokens} prompt tokens + max_tokens {self.max_tokens} "
            f"> context limit {self.limit}"
        )
        if self.skipped:
            return f"not sent (truncate: {self.policy}): {over}"
        return (
            f"{self.field} cut from {self.original_chars:,} to {self.kept_chars:,} characters "
            f"(truncate: longest): {over}"
        )


class LearnedLimits:
    """Context limits named by an endpoint's refusals (per endpoint and model)."""

    def __init__(self) -> None:
        self._limits: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def get(self, base_url: str, model: str) -> int | None:
        with self._lock:
            return self._limits.get((base_url, model))

    def learn(self, base_url: str, model: str, limit: int) -> None:
        with self._lock:
            self._limits[(base_url, model)] = limit


LEARNED = LearnedLimits()


def requested_tokens(cause: str | None) -> int | None:
    """The token count a refusal names for the request, where it names one."""
    found = _REQUESTED.search(cause or "")
    if not found:
        return None
    return int(next(g for g in found.groups() if g))


def context_limit(llm: LLMClient, model: str, configured: int | None, *, learned: bool = True) -> int | None:
    """The limit to fit into: the suite's, the server's, or (``learned``) one a refusal
    named earlier in this process."""
    if configured:
        return configured
    published = getattr(llm, "context_limit", None)
    if isinstance(published, int) and published > 0:
        return published
    return LEARNED.get(llm.settings.base_url, model) if learned else None


def server_ratio(cause: str | None, estimate: int, max_tokens: int) -> float:
    """How many tokens the server counted per estimated token of a refused prompt (>= 1):
    a prompt fitted by the estimate alone may still be too long for a dense tokenizer."""
    requested = requested_tokens(cause)
    if not requested or estimate <= 0:
        return 1.0
    return max(1.0, (requested - max_tokens) / estimate)


def fit(
    fields: Mapping[str, str],
    render: Callable[[dict[str, str]], list[dict[str, Any]]],
    *,
    policy: TruncatePolicy,
    limit: int,
    max_tokens: int,
    ratio: float = 1.0,
) -> tuple[dict[str, str], Truncation | None]:
    """The fields to send and what was done (None: they fit as they are).

    ``render`` turns fields into the chat messages; ``ratio`` scales the estimate when a
    refusal showed the server counts more tokens than the estimate.
    """
    values = dict(fields)

    def tokens(v: dict[str, str]) -> int:
        return math.ceil(estimate_prompt_tokens(render(v)) * ratio)

    budget = int(limit * SAFETY) - max_tokens
    before = tokens(values)
    if before <= budget or policy == "none":
        return values, None
    if policy == "skip" or not values:
        return values, Truncation(policy, before, max_tokens, limit, skipped=True)
    name = max(values, key=lambda k: len(values[k]))
    text = values[name]
    # Characters to drop: the excess at four characters a token, scaled; then a few
    # rounds of correction (the marker and the ratio move the estimate).
    keep = len(text)
    now = before
    for _ in range(8):
        excess = now - budget
        if excess <= 0:
            break
        keep = max(0, keep - math.ceil(excess * 4 / ratio) - len(CUT_MARKER) - 8)
        values[name] = text[:keep] + CUT_MARKER.format(cut=len(text) - keep)
        now = tokens(values)
        if keep == 0:
            break
    if now > budget:
        # Even the longest field gone does not make it fit: the rest is too long.
        return dict(fields), Truncation(policy, before, max_tokens, limit, skipped=True)
    return values, Truncation(
        policy, before, max_tokens, limit,
        field=name, original_chars=len(text), kept_chars=keep, fitted_tokens=now,
    )


class ContextSkip(SkipCase):
    """``truncate: skip`` (or no cut fits): the case was not sent; ``truncation`` says why."""

    def __init__(self, what: str, truncation: Truncation) -> None:
        super().__init__(f"{what} {truncation.describe()}")
        self.truncation = truncation


T = TypeVar("T")


async def send_fitted(
    llm: LLMClient,
    send: Callable[[list[dict[str, Any]]], Awaitable[T]],
    *,
    fields: Mapping[str, str],
    render: Callable[[dict[str, str]], list[dict[str, Any]]],
    policy: TruncatePolicy,
    context_tokens: int | None,
    reply_room: int,
    model: str | None,
    what: str,
) -> tuple[T, Truncation | None]:
    """Send ``render(fields)`` through ``send``, fitted by ``policy`` (see the module
    docstring): at most three sends (as it is or fitted by the estimate; fitted once a
    refusal named the limit; fitted by the server's own count). ``fields`` are the only
    texts that may be cut (never the judged text). Raises ContextSkip for a case not
    sent, ContextLengthError when the policy is ``none`` or no fit helps."""
    name = model or llm.model
    base_url = llm.settings.base_url

    def fitted(limit: int | None, ratio: float) -> tuple[list[dict[str, Any]], Truncation | None]:
        if limit is None or policy == "none":
            return render(dict(fields)), None
        values, record = fit(
            fields, render, policy=policy, limit=limit, max_tokens=reply_room, ratio=ratio
        )
        if record is not None and record.skipped:
            raise ContextSkip(what, record)
        return render(values), record

    limit = context_limit(llm, name, context_tokens)
    messages, record = fitted(limit, 1.0)
    ratio = 1.0
    for _ in range(3):
        try:
            return await send(messages), record
        except ContextLengthError as exc:
            if policy == "none" or not exc.limit or ratio > 1.0:
                raise
            LEARNED.learn(base_url, name, exc.limit)
            if limit is not None:
                ratio = server_ratio(exc.cause, exc.prompt_tokens, reply_room)
                if ratio <= 1.0:
                    raise
            limit = context_tokens or exc.limit
            messages, record = fitted(limit, ratio)
    raise AssertionError("unreachable: the third send returns or raises")  # pragma: no cover
