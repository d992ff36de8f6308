"""LLM-as-judge: ask, then read a JSON object, a Yes/No verdict or the raw text.

A reply that cannot be read is asked again a bounded number of times, each time with
the bad reply and the reason shown to the model (which also makes the retry a distinct
cache entry); after that the case is an ERROR carrying the raw reply (``JudgeError``),
never a silent zero or pass.

Every judge sends a ``max_tokens`` that fits its reply (a one-word verdict a small cap, a
JSON object a larger one) unless the caller or ``--evals-max-tokens`` sets one: a small
local model left without a cap can write until its context is full. A reply cut at that
cap (``finish_reason: length``) is a :class:`JudgeTruncatedError` at once: never parsed,
never sent back in a re-ask. JSON judges ask for structured output where the endpoint
takes it (structured_output.py).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from pytest_evals.llm.call_errors import ContextLengthError
from pytest_evals.llm.client import ChatResponse, Messages, normalize_messages
from pytest_evals.llm.structured_output import chat_structured
from pytest_evals.llm.tokens import estimate_prompt_tokens
from pytest_evals.llm.truncation import LEARNED, SAFETY, context_limit
from pytest_evals.model.errors import JudgeError, JudgeTruncatedError

if TYPE_CHECKING:
    from pytest_evals.llm.client import LLMClient

#: Follow-up sent after an unusable reply; {problem} says what was wrong.
JSON_RETRY_PROMPT = (
    "Your previous reply could not be used: {problem}. "
    "Reply again with only one JSON object, no other text."
)
VERDICT_RETRY_PROMPT = "Your previous reply could not be used: {problem}. Reply again with exactly one word: Yes or No."
#: Default ``max_tokens`` of a Yes/No judge: room for "Yes." or "No, because" and no essay.
VERDICT_MAX_TOKENS = 16
#: Default ``max_tokens`` of a JSON judge: lists of statements with reasons fit.
JSON_MAX_TOKENS = 1024
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_YES = re.compile(r"\byes\b", re.IGNORECASE)
_NO = re.compile(r"\bno\b", re.IGNORECASE)


def extract_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a reply: bare, in a ``` fence, or between the outer braces."""
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    problem = "the reply contains no JSON object"
    for candidate in candidates:
        if not candidate:
            continue
        try:
            value = json.loads(candidate)
        except ValueError as exc:
            problem = f"invalid JSON ({exc})"
            continue
        if isinstance(value, dict):
            return value
        problem = f"expected a JSON object, got {type(value).__name__}"
    raise ValueError(problem)


def parse_verdict(text: str) -> bool | None:
    """True for Yes, False for No, None when the reply has both or neither."""
    yes, no = bool(_YES.search(text)), bool(_NO.search(text))
    if yes == no:
        return None
    return yes


def _short(text: str, limit: int = 300) -> str:
    return (
        text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"
    )


def _schema_name(schema: type[BaseModel] | None) -> str:
    # OpenAI's json_schema name: letters, digits, _ and - only.
    return re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__ if schema is not None else "reply")[:64]


def _truncated(response: ChatResponse, wanted: str) -> JudgeTruncatedError:
    return JudgeTruncatedError(
        f"judge reply was cut at the length limit (finish_reason 'length', "
        f"{response.completion_tokens} completion tokens) before it gave {wanted}: "
        f"raise max_tokens (--evals-max-tokens or the suite's max_tokens); "
        f"reply: {_short(response.text)!r}",
        raw_reply=response.text,
    )


class Judge:
    """Helpers over an :class:`LLMClient` (``ctx.judge``, or the ``judge`` fixture)."""

    def __init__(self, llm: LLMClient, *, max_attempts: int = 3, namespace: str = "judge") -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.llm = llm
        self.max_attempts = max_attempts
        self.namespace = namespace

    @property
    def name(self) -> str:
        """Which model judges (for report headers)."""
        return self.llm.model

    async def text(
        self,
        messages: Messages,
        *,
        namespace: str | None = None,
        model: str | None = None,
        temperature: float | None = None,
        repeat: int = 0,
        **kwargs: Any,
    ) -> tuple[str, ChatResponse]:
        response = await self.llm.chat(
            messages,
            namespace=namespace or self.namespace,
            model=model,
            temperature=temperature,
            repeat=repeat,
            **kwargs,
        )
        return response.text, response

    async def json(
        self,
        messages: Messages,
        *,
        schema: type[BaseModel] | None = None,
        namespace: str | None = None,
        model: str | None = None,
        temperature: float | None = None,
        repeat: int = 0,
        **kwargs: Any,
    ) -> tuple[Any, ChatResponse]:
        """``(object, response)``: a dict, or an instance of ``schema`` when given."""

        def parse(text: str) -> Any:
            data = extract_json_object(text)
            if schema is None:
                return data
            try:
                return schema.model_validate(data)
            except ValidationError as exc:
                fields = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or '(object)'}: {e['msg']}"
                    for e in exc.errors()
                )
                raise ValueError(f"JSON does not match {schema.__name__}: {fields}") from None

        return await self._ask(
            messages,
            parse,
            JSON_RETRY_PROMPT,
            "a JSON object",
            namespace=namespace,
            model=model,
            temperature=temperature,
            repeat=repeat,
            default_max_tokens=JSON_MAX_TOKENS,
            structured=(schema.model_json_schema() if schema is not None else None, _schema_name(schema)),
            **kwargs,
        )

    async def verdict(
        self,
        messages: Messages,
        *,
        namespace: str | None = None,
        model: str | None = None,
        temperature: float | None = None,
        repeat: int = 0,
        strict: bool = True,
        **kwargs: Any,
    ) -> tuple[bool | None, ChatResponse]:
        """``(True|False, response)`` for Yes/No. With ``strict=False`` an unclear reply
        (both or neither word) is returned as ``None`` at once, without re-asking (the
        HaluEval rule: such a reply counts as wrong)."""
        if not strict:
            if kwargs.get("max_tokens") is None:
                kwargs["max_tokens"] = self._cap(VERDICT_MAX_TOKENS)
            text, response = await self.text(
                messages,
                namespace=namespace,
                model=model,
                temperature=temperature,
                repeat=repeat,
                **kwargs,
            )
            if response.finish_reason == "length":
                raise _truncated(response, "a Yes/No verdict")
            return parse_verdict(text), response

        def parse(text: str) -> bool:
            verdict = parse_verdict(text)
            if verdict is None:
                raise ValueError("the reply says neither (or both) Yes and No")
            return verdict

        return await self._ask(
            messages,
            parse,
            VERDICT_RETRY_PROMPT,
            "a Yes/No verdict",
            namespace=namespace,
            model=model,
            temperature=temperature,
            repeat=repeat,
            default_max_tokens=VERDICT_MAX_TOKENS,
            **kwargs,
        )

    def _cap(self, default: int) -> int | None:
        """The judge's own cap, unless ``--evals-max-tokens`` sets one for every request."""
        return None if self.llm.settings.max_tokens is not None else default

    def _fitted_cap(self, conversation: list[dict[str, Any]], default: int, model: str | None) -> int | None:
        """The judge's own cap, shrunk to the room the prompt leaves where the model's
        context is known (a 2k-token local model cannot take a 1k reply after a long prompt)."""
        cap = self._cap(default)
        if cap is None:
            return None
        # Only a limit the suite or the server states: one learned from an earlier
        # refusal would make this request's body (its cache key) depend on case order.
        limit = context_limit(self.llm, model or self.llm.model, None, learned=False)
        if limit is None:
            return cap
        room = int(limit * SAFETY - estimate_prompt_tokens(conversation))
        return max(min(cap, room), VERDICT_MAX_TOKENS)

    async def _ask(
        self,
        messages: Messages,
        parse: Any,
        retry_prompt: str,
        wanted: str,
        *,
        namespace: str | None,
        default_max_tokens: int,
        structured: tuple[dict[str, Any] | None, str] | None = None,
        **kwargs: Any,
    ) -> tuple[Any, ChatResponse]:
        conversation = normalize_messages(messages)
        if kwargs.get("max_tokens") is None:
            kwargs["max_tokens"] = self._fitted_cap(conversation, default_max_tokens, kwargs.get("model"))
        problem = ""
        reply = ""
        for attempt in range(self.max_attempts):
            try:
                if structured is not None and "response_format" not in kwargs:
                    schema, name = structured
                    response, _ = await chat_structured(
                        self.llm,
                        conversation,
                        schema=schema,
                        name=name,
                        prompt_asks_json=True,
                        namespace=namespace or self.namespace,
                        attempt=attempt,
                        **kwargs,
                    )
                else:
                    response = await self.llm.chat(
                        conversation, namespace=namespace or self.namespace, attempt=attempt, **kwargs
                    )
            except ContextLengthError as exc:
                if exc.limit:
                    # Suites with a truncate policy fit later prompts to the limit it named.
                    LEARNED.learn(self.llm.settings.base_url, kwargs.get("model") or self.llm.model, exc.limit)
                raise
            reply = response.text
            if response.finish_reason == "length":
                # Cut at the length limit: whatever it says is half a reply. Re-asking
                # would send the cut text back (and can overflow the context itself).
                raise _truncated(response, wanted)
            try:
                return parse(reply), response
            except ValueError as exc:
                problem = str(exc)
            conversation = [
                *conversation,
                {"role": "assistant", "content": reply},
                {"role": "user", "content": retry_prompt.format(problem=problem)},
            ]
        raise JudgeError(
            f"judge reply is not {wanted} after {self.max_attempts} attempt"
            f"{'s' if self.max_attempts > 1 else ''}: {problem}; last reply: {_short(reply)!r}",
            raw_reply=reply,
        )

    # -- synchronous variants for users' own tests -------------------------------------
    def text_sync(self, messages: Messages, **kwargs: Any) -> tuple[str, ChatResponse]:
        return self.llm.engine.run(self.text(messages, **kwargs))

    def json_sync(self, messages: Messages, **kwargs: Any) -> tuple[Any, ChatResponse]:
        return self.llm.engine.run(self.json(messages, **kwargs))

    def verdict_sync(self, messages: Messages, **kwargs: Any) -> tuple[bool | None, ChatResponse]:
        return self.llm.engine.run(self.verdict(messages, **kwargs))

