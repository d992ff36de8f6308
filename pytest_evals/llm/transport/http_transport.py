"""Sending one chat completion request: through the openai SDK, or a lean aiohttp path
(which the ``process`` transport, :mod:`.process_transport`, runs in a helper process).

Every transport makes exactly one attempt and turns every failure into an
:class:`~pytest_evals.llm.retry.AttemptError` (retryable or not); retries, deadlines
and concurrency belong to the client. Each is created on the event loop that uses it,
because its connection pool is bound to it.

``openai`` is the official SDK on its aiohttp backend (``openai.DefaultAioHttpClient``;
its default httpx backend costs almost twice the CPU per request). ``aiohttp`` posts
the same JSON with aiohttp directly, at about a third of the SDK's CPU per request
(docs/llm.md, "Transport").
"""

from __future__ import annotations

import contextlib
import inspect
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from pytest_evals.llm.retry import AttemptError, status_error
from pytest_evals.llm.settings import LLMSettings

if TYPE_CHECKING:
    from pytest_evals.llm.cache import CacheOps

#: Placeholder sent when the endpoint needs no key (local servers); not a secret.
NO_KEY = "not-needed"


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None
    #: The reply's token log-probabilities when the request asked for them
    #: (``logprobs: true``): ``[{"token", "logprob", "top_logprobs": [...]}, ...]``.
    logprobs: list[dict[str, Any]] | None = None


def _token_logprobs(content: Any) -> list[dict[str, Any]] | None:
    """``choices[0].logprobs.content`` reduced to tokens and their alternatives."""
    if not isinstance(content, list):
        return None
    out: list[dict[str, Any]] = []
    for item in content:
        get = item.get if isinstance(item, dict) else lambda k, i=item: getattr(i, k, None)
        alternatives = get("top_logprobs") or []
        out.append({
            "token": get("token"),
            "logprob": get("logprob"),
            "top_logprobs": [
                {"token": a.get("token"), "logprob": a.get("logprob")} if isinstance(a, dict)
                else {"token": getattr(a, "token", None), "logprob": getattr(a, "logprob", None)}
                for a in alternatives
            ],
        })
    return out


class Transport(Protocol):
    #: The response cache's claims and stores, when this transport applies them
    #: elsewhere (the process transport's helper); None: the client's cache does.
    @property
    def cache_ops(self) -> CacheOps | None: ...

    async def send(self, body: dict[str, Any]) -> Completion: ...

    async def aclose(self) -> None: ...


def malformed(detail: str) -> AttemptError:
    return AttemptError(f"malformed response body: {detail}", retryable=True)


#: More tokens than any model reads or writes in one call: a count past it is a broken
#: (or hostile) server's, and summing it would swamp the run's totals and cost.
MAX_TOKEN_COUNT = 10**12


def token_count(value: Any, name: str) -> int:
    """A usage count as the run sums it. Absent (or null) is 0: the usage is unknown, as
    when a server sends none. Anything but a whole number in 0..10**12 (a negative, a
    string, NaN, 1e400, a bool) makes the reply malformed rather than a total that lies."""
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # 12.0 from a server that writes JSON numbers as floats
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
        raise malformed(f"{name}: expected a token count (a whole number 0..10**12), got {shown}")
    return value


def completion_from_json(data: Any, requested_model: str) -> Completion:
    """Read the fields we need from a chat.completion object; malformed -> retryable."""
    if not isinstance(data, dict):
        raise malformed(f"expected a JSON object, got {type(data).__name__}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise malformed("no 'choices' in the reply")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise malformed("no 'choices[0].message' in the reply")
    content = message.get("content")
    if content is None:
        content = message.get("refusal") or ""
    raw_usage = data.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    return Completion(
        text=str(content),
        model=str(data.get("model") or requested_model),
        prompt_tokens=token_count(usage.get("prompt_tokens"), "usage.prompt_tokens"),
        completion_tokens=token_count(usage.get("completion_tokens"), "usage.completion_tokens"),
        finish_reason=_text_or_none(choices[0].get("finish_reason")),
        logprobs=_token_logprobs((choices[0].get("logprobs") or {}).get("content"))
        if isinstance(choices[0].get("logprobs"), dict) else None,
    )


def _text_or_none(value: Any) -> str | None:
    """A finish reason as text: whatever a server puts there is stored and shown."""
    return None if value is None else str(value)


def completion_from_sdk(obj: Any, requested_model: str) -> Completion:
    """Attribute access on the SDK's object (cheaper than dumping it to a dict)."""
    try:
        choice = obj.choices[0]
        message = choice.message
        content = message.content
        if content is None:
            content = getattr(message, "refusal", None) or ""
        usage = getattr(obj, "usage", None)
        return Completion(
            text=str(content),
            model=str(getattr(obj, "model", None) or requested_model),
            prompt_tokens=token_count(getattr(usage, "prompt_tokens", None), "usage.prompt_tokens"),
            completion_tokens=token_count(getattr(usage, "completion_tokens", None), "usage.completion_tokens"),
            finish_reason=_text_or_none(getattr(choice, "finish_reason", None)),
            logprobs=_token_logprobs(getattr(getattr(choice, "logprobs", None), "content", None)),
        )
    except (AttributeError, IndexError, TypeError, KeyError, ValueError) as exc:
        raise malformed(f"{type(exc).__name__}: {exc}") from None


class BodyTooLarge(Exception):
    """The server sent more than ``max_body_bytes``: an endless body must not fill memory."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.limit = limit

    def attempt_error(self) -> AttemptError:
        # Not retried: a server that sent this once will send it again.
        return AttemptError(
            f"response body larger than {self.limit} bytes (evals_max_response_bytes); "
            "the reply was not read",
            retryable=False,
        )


def check_length(headers: Any, limit: int) -> None:
    """Refuse early when the server announces a body over the cap."""
    announced = headers.get("Content-Length") if headers is not None else None
    if announced is not None and announced.strip().isdigit() and int(announced) > limit:
        raise BodyTooLarge(limit)


async def read_capped(chunks: Any, limit: int) -> bytes:
    """Join an async iterator of byte chunks, raising BodyTooLarge past ``limit`` bytes."""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        parts.append(chunk)
    return b"".join(parts)


@lru_cache(maxsize=1)
def _capped_stream_class() -> type:
    """An httpx response stream that stops at the cap (wraps the SDK's response body).

    Built on first use: it must subclass the installed httpx's AsyncByteStream, and
    httpx is imported only with the SDK."""
    import importlib

    try:
        httpx_mod = importlib.import_module("httpx2")
    except ImportError:  # older SDKs are built on httpx
        httpx_mod = importlib.import_module("httpx")

    class CappedStream(httpx_mod.AsyncByteStream):  # type: ignore[name-defined]
        def __init__(self, stream: Any, limit: int) -> None:
            self._stream = stream
            self._limit = limit

        async def __aiter__(self) -> Any:
            size = 0
            async for chunk in self._stream:
                size += len(chunk)
                if size > self._limit:
                    raise BodyTooLarge(self._limit)
                yield chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

    return CappedStream


def _capped_decoded(aiter_bytes: Any, limit: int) -> Any:
    """``response.aiter_bytes`` raising BodyTooLarge past ``limit`` decoded bytes."""

    async def capped(chunk_size: int | None = None) -> Any:
        size = 0
        async with contextlib.aclosing(aiter_bytes(chunk_size)) as parts:
            async for part in parts:
                size += len(part)
                if size > limit:
                    raise BodyTooLarge(limit)
                yield part

    return capped


def completion_from_reply(status: int, raw: bytes, headers: Any, model: str) -> Completion:
    """A raw HTTP reply read: an error status, a body that is not JSON, or the completion."""
    if status != 200:
        raise status_error(status, error_message(raw), headers)
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise malformed(f"not JSON ({exc})") from None
    return completion_from_json(data, model)


def error_message(raw: bytes) -> str:
    """The server's own error message when the body is an OpenAI-style error, else a snippet."""
    try:
        data = json.loads(raw)
        message = data["error"]["message"]
        return str(message)[:500]
    except (ValueError, KeyError, TypeError):
        return raw[:200].decode("utf-8", "replace")


class AiohttpTransport:
    cache_ops = None  # the client's ResponseCache applies claims and stores
    def __init__(self, settings: LLMSettings) -> None:
        self.setup(settings.base_url, settings.authorization, settings.concurrency, settings.max_body_bytes)

    def setup(self, base_url: str, authorization: str | None, concurrency: int, max_body: int) -> None:
        """Also called in the helper process (see process_transport.py), which has no settings object."""
        import aiohttp

        from pytest_evals.llm.endpoint_probe import endpoint_url

        self._aiohttp = aiohttp
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if authorization:
            headers["Authorization"] = authorization
        self._max_body = max_body
        self._session = aiohttp.ClientSession(
            headers=headers,
            connector=aiohttp.TCPConnector(limit=max(100, concurrency * 2), ttl_dns_cache=300),
            # The client enforces the deadline around the whole attempt.
            timeout=aiohttp.ClientTimeout(total=None),
        )
        self._url = endpoint_url(base_url, "/chat/completions")

    async def send(self, body: dict[str, Any]) -> Completion:
        return await self.post(json.dumps(body).encode(), str(body.get("model")))

    async def post(self, payload: bytes, model: str) -> Completion:
        """Send an encoded request body; ``model`` is the one it asked for."""
        aiohttp = self._aiohttp
        try:
            # A redirect is the endpoint's answer, not followed: a 307 would send the
            # prompt to whatever host its Location names.
            async with self._session.post(self._url, data=payload, allow_redirects=False) as resp:
                status = resp.status
                headers = resp.headers
                check_length(headers, self._max_body)
                raw = await read_capped(resp.content.iter_chunked(65536), self._max_body)
        except BodyTooLarge as exc:
            raise exc.attempt_error() from None
        except aiohttp.ClientError as exc:
            raise AttemptError(
                f"connection error: {type(exc).__name__}: {exc}", retryable=True
            ) from None
        return completion_from_reply(status, raw, headers, model)

    async def aclose(self) -> None:
        await self._session.close()


@lru_cache(maxsize=1)
def _sdk_parameters() -> frozenset[str]:
    """Keyword parameters the installed SDK's ``chat.completions.create`` accepts."""
    from openai.resources.chat.completions import AsyncCompletions

    return frozenset(inspect.signature(AsyncCompletions.create).parameters) - {"self", "extra_body"}


class OpenAITransport:
    cache_ops = None  # the client's ResponseCache applies claims and stores
    def __init__(self, settings: LLMSettings) -> None:
        import openai

        from pytest_evals.llm.endpoint_probe import split_query

        self._openai = openai
        self._max_body = settings.max_body_bytes
        http_client = openai.DefaultAioHttpClient(
            limits=_limits(settings.concurrency), event_hooks={"response": [self._cap_body]}
        )
        authorization = settings.authorization
        # The SDK would append each path after a query left in base_url.
        base_url, query = split_query(settings.base_url)
        self._client = openai.AsyncOpenAI(
            api_key=settings.api_key.reveal() if settings.api_key else NO_KEY,
            base_url=base_url,
            default_query=query or None,
            max_retries=0,
            timeout=settings.timeout,
            http_client=http_client,
            # The SDK puts its own Bearer header first; ours (Basic from the URL) wins.
            default_headers={"Authorization": authorization} if authorization else None,
        )
        self._known = _sdk_parameters()

    async def send(self, body: dict[str, Any]) -> Completion:
        openai = self._openai
        kwargs = {k: v for k, v in body.items() if k in self._known}
        extra = {k: v for k, v in body.items() if k not in self._known}
        try:
            completion = await self._client.chat.completions.create(
                **kwargs, extra_body=extra or None
            )
        except BodyTooLarge as exc:
            raise exc.attempt_error() from None
        except openai.APIStatusError as exc:
            raise status_error(
                exc.status_code, error_message(exc.response.content), exc.response.headers
            ) from None
        except openai.APITimeoutError as exc:
            refused = _refusal(exc)
            if refused is not None:
                # The SDK's aiohttp backend reports a refused connection as a connect
                # timeout: it is the server being away, not slow.
                raise AttemptError(
                    f"connection error: {type(refused).__name__}: {refused}", retryable=True
                ) from None
            raise AttemptError("request timed out", retryable=True) from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise AttemptError(
                f"connection error: {type(cause).__name__}: {cause}", retryable=True
            ) from None
        except (openai.APIResponseValidationError, ValueError) as exc:
            raise malformed(f"{type(exc).__name__}: {exc}") from None
        return completion_from_sdk(completion, str(body.get("model")))

    async def _cap_body(self, response: Any) -> None:
        # Runs before the SDK reads the body, for answers and error bodies alike.
        check_length(response.headers, self._max_body)
        response.stream = _capped_stream_class()(response.stream, self._max_body)
        # The stream is the body as sent; httpx decodes a compressed one after it, in
        # response.aiter_bytes (which every read of the SDK goes through), and 1 MB of
        # gzip decodes to 1 GB: the decoded body is capped there, at the same size.
        response.aiter_bytes = _capped_decoded(response.aiter_bytes, self._max_body)

    async def aclose(self) -> None:
        await self._client.close()


def _refusal(exc: BaseException) -> BaseException | None:
    """The connection error under an SDK exception's causes, if one is there."""
    seen = exc.__cause__ or exc.__context__
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ConnectionError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _limits(concurrency: int) -> Any:
    """Connection limits that never make the pool the bottleneck below ``concurrency``."""
    import importlib

    try:
        httpx_mod = importlib.import_module("httpx2")
    except ImportError:  # older SDKs are built on httpx
        httpx_mod = importlib.import_module("httpx")
    return httpx_mod.Limits(
        max_connections=max(1000, concurrency * 2), max_keepalive_connections=max(100, concurrency)
    )
