"""One HaluEval judge request: its cap, its context fit and, optionally, its schema.

- ``max_tokens``: the suite's, else ``--evals-max-tokens``, else 16 (a one-word verdict
  with room for "No, because"); a small model left without a cap can write until its
  context is full. Under ``prompts: official`` nothing is sent unless asked for: the
  official script's request has no ``max_tokens``, and its body is reproduced as it is.
- ``truncate``: the prompt is fitted into the model's context before it is sent
  (llm/truncation.py). The judged text itself is never cut (the hallucination may be in
  the part cut away): the longest of the item's other shown fields is (the summarization
  document, the dialogue history, the question, the knowledge line).
- ``structured: true`` asks for ``{"verdict": "Yes" | "No"}`` where the endpoint enforces
  a JSON schema (a grammar on llama.cpp), so a small judge cannot wander off; the reply is
  read by the suite's ``parse`` rule as any other. Not with ``prompts: official``: the
  official protocol is plain text.
- A reply cut at the cap (``finish_reason: length``) is read only where the parse rule's
  verdict cannot depend on the cut (``first``: the first Yes/No word is already there
  and provably whole, i.e. a character that ends the word follows it before the cut);
  otherwise, and always when it holds no verdict word, it is a ``judge_truncated`` ERROR,
  never a "No".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_evals.families.halueval.parsing import ParseMode, first_word_at_cut, parse_judgement
from pytest_evals.llm.call_errors import ContextLengthError
from pytest_evals.llm.judge import VERDICT_MAX_TOKENS
from pytest_evals.llm.structured_output import Level, chat_structured
from pytest_evals.llm.truncation import (
    LEARNED,
    TruncatePolicy,
    Truncation,
    context_limit,
    fit,
    server_ratio,
)
from pytest_evals.model.errors import JudgeTruncatedError, SkipCase

if TYPE_CHECKING:
    from pytest_evals.families.halueval.items import HaluEvalItem
    from pytest_evals.families.halueval.prompts import PromptSet
    from pytest_evals.llm.client import ChatResponse, LLMClient

#: The two-option reply of ``structured: true``.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["Yes", "No"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}

#: The item's fields a prompt may show besides the judged text, per task.
_CUTTABLE = {
    "qa": ("question", "knowledge"),
    "dialogue": ("dialogue_history_raw", "knowledge"),
    "summarization": ("context",),
    "general": ("question",),
}


@dataclass
class JudgeRequest:
    """The suite's settings for one request (from HaluEvalConfig)."""

    model: str | None
    temperature: float | None
    max_tokens: int | None
    truncate: TruncatePolicy
    context_tokens: int | None
    structured: bool
    parse: ParseMode
    with_knowledge: bool
    #: ``prompts: official``: no default cap (the script sends none).
    official: bool = False


@dataclass
class JudgeAnswer:
    response: ChatResponse
    messages: list[dict[str, Any]]
    truncation: Truncation | None
    #: The response_format rung used (text: none).
    format: Level


class ContextSkip(SkipCase):
    """``truncate: skip`` (or no cut fits): the case was not sent."""

    def __init__(self, truncation: Truncation) -> None:
        super().__init__(f"HaluEval judge prompt {truncation.describe()}")
        self.truncation = truncation


def _fields(item: HaluEvalItem, with_knowledge: bool) -> dict[str, str]:
    names = [n for n in _CUTTABLE[item.task_type] if n != "knowledge" or with_knowledge]
    return {n: getattr(item, n) for n in names if getattr(item, n)}


def cap(request: JudgeRequest, llm: LLMClient) -> int | None:
    """The max_tokens sent (None: the session's --evals-max-tokens)."""
    if request.max_tokens is not None:
        return request.max_tokens
    if request.official or llm.settings.max_tokens is not None:
        return None
    return VERDICT_MAX_TOKENS


async def ask(
    request: JudgeRequest,
    prompts: PromptSet,
    item: HaluEvalItem,
    output: str,
    llm: LLMClient,
    uncut_messages: list[dict[str, Any]] | None = None,
) -> JudgeAnswer:
    """Send the judge request; raises ContextSkip, ContextLengthError, LLMError,
    JudgeTruncatedError. ``uncut_messages``: ``prompts.messages(item, output)`` when the
    caller already rendered them."""
    model = request.model or llm.model
    max_tokens = cap(request, llm)
    reply_room = max_tokens if max_tokens is not None else (llm.settings.max_tokens or 0)
    fields = _fields(item, request.with_knowledge)

    uncut: list[list[dict[str, Any]]] = [] if uncut_messages is None else [uncut_messages]

    def render(values: dict[str, str]) -> list[dict[str, Any]]:
        if values == fields:
            # Uncut values are the item's own (the same strings): no copy of the item,
            # and rendered once (the length check and the send both ask for them).
            if not uncut:
                uncut.append(prompts.messages(item, output))
            return uncut[0]
        return prompts.messages(item.model_copy(update=values), output)

    def fitted(limit: int | None, ratio: float) -> tuple[list[dict[str, Any]], Truncation | None]:
        if limit is None or request.truncate == "none":
            return render(fields), None
        values, record = fit(
            fields, render, policy=request.truncate, limit=limit, max_tokens=reply_room, ratio=ratio
        )
        if record is not None and record.skipped:
            raise ContextSkip(record)
        return render(values), record

    base_url = llm.settings.base_url
    limit = context_limit(llm, model, request.context_tokens)
    messages, record = fitted(limit, 1.0)
    # At most three sends: as it is (limit unknown) or fitted by the estimate, fitted by
    # the estimate once the refusal named the limit, fitted by the server's own count.
    ratio = 1.0
    for _ in range(3):
        try:
            response, level = await chat_structured(
                llm,
                messages,
                schema=VERDICT_SCHEMA if request.structured else None,
                name="verdict",
                prompt_asks_json=False,
                model=request.model,
                temperature=request.temperature,
                max_tokens=max_tokens,
                namespace="halueval",
            )
        except ContextLengthError as exc:
            if request.truncate == "none" or not exc.limit or ratio > 1.0:
                raise
            LEARNED.learn(base_url, model, exc.limit)
            if limit is not None:
                ratio = server_ratio(exc.cause, exc.prompt_tokens, reply_room)
                if ratio <= 1.0:
                    raise
            limit = request.context_tokens or exc.limit
            messages, record = fitted(limit, ratio)
            continue
        break
    else:  # pragma: no cover - the loop raises or breaks
        raise AssertionError("unreachable")
    if response.finish_reason == "length":
        judgement = parse_judgement(response.text, request.parse)
        at_cut = first_word_at_cut(response.text)
        if request.parse != "first" or judgement.unparseable or at_cut:
            if judgement.unparseable:
                why = "before it said Yes or No"
            elif request.parse != "first":
                why = f"and parse: {request.parse} reads the whole reply"
            else:
                why = "right after its first Yes/No word, which may be the start of a longer word"
            raise JudgeTruncatedError(
                f"judge reply was cut at the length limit (finish_reason 'length', "
                f"{response.completion_tokens} completion tokens, max_tokens {max_tokens}) "
                f"{why}: "
                f"raise the suite's max_tokens{'' if request.structured else ' or set structured: true'}; "
                f"reply: {response.text[:300]!r}",
                raw_reply=response.text,
            )
    return JudgeAnswer(response, messages, record, level)
