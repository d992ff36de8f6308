"""Sending one request to AWS Bedrock: botocore's ``bedrock-runtime`` Converse call.

``--evals-provider bedrock`` selects this transport. Like the others it makes exactly
one attempt and turns every failure into an :class:`~pytest_evals.llm.retry.AttemptError`
(botocore's own retries are off), so the client's cache, concurrency limit, deadline,
retries and redaction apply unchanged; :mod:`.bedrock_converse` maps the body and the
errors (``ThrottlingException`` is a 429 to the client, ``ServiceUnavailableException``
a 503).

botocore is synchronous: each call runs on a thread of this transport's own pool (as
many threads as ``--evals-concurrency``), and the event loop only awaits it. When the
client's deadline cancels an attempt, its thread still ends within botocore's read
timeout, which is the same ``--evals-timeout``. Requests are signed with SigV4 by
botocore from the credentials of its standard chain; their values are registered with
the redaction layer whenever botocore hands out new ones (refreshable credentials).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from pytest_evals.llm.bedrock_session import CHAIN, botocore_session, register_credentials
from pytest_evals.llm.retry import AttemptError
from pytest_evals.llm.settings import split_userinfo
from pytest_evals.llm.transport.bedrock_converse import (
    attempt_error,
    completion_from_converse,
    converse_request,
)
from pytest_evals.llm.transport.http_transport import (
    BodyTooLarge,
    Completion,
    check_length,
    malformed,
)

if TYPE_CHECKING:
    from pytest_evals.llm.settings import LLMSettings

SERVICE = "bedrock-runtime"


class BedrockTransport:
    cache_ops = None  # the client's ResponseCache applies claims and stores

    def __init__(self, settings: LLMSettings) -> None:
        self._settings = settings
        self._executor = ThreadPoolExecutor(
            max_workers=settings.concurrency, thread_name_prefix="pytest-evals-bedrock"
        )
        self._client: Any = None
        self._credentials: Any = None
        self._starting: asyncio.Future[None] | None = None
        self._seen: tuple[str, ...] = ()
        self._lock = threading.Lock()

    # -- set-up ---------------------------------------------------------------------------
    def _build(self) -> None:
        """botocore's client (loading the service model takes tens of milliseconds: on a
        thread, started by the client's prepare() while pytest collects)."""
        from botocore.config import Config

        s = self._settings
        session = botocore_session()
        credentials = session.get_credentials()
        if credentials is None:
            raise AttemptError(f"no AWS credentials found (standard chain: {CHAIN})", retryable=False)
        config = Config(
            # One attempt: the client retries, with its own backoff and throttling rules.
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=min(s.timeout, 10.0),
            read_timeout=s.timeout,
            max_pool_connections=max(10, s.concurrency),
            user_agent_extra="pytest-evals",
        )
        endpoint = split_userinfo(s.configured_base_url)[0] if s.configured_base_url else None
        client = session.create_client(
            SERVICE, region_name=s.aws_region, endpoint_url=endpoint, config=config
        )
        cap_response_bodies(client, s.max_body_bytes)
        self._client = client
        self._credentials = credentials

    async def start(self) -> None:
        """Build botocore's client once (also called by the client before a request)."""
        if self._client is not None:
            return
        if self._starting is None:
            loop = asyncio.get_running_loop()
            self._starting = loop.run_in_executor(self._executor, self._build)
        await asyncio.shield(self._starting)

    # -- one attempt ------------------------------------------------------------------------
    async def send(self, body: dict[str, Any]) -> Completion:
        try:
            await self.start()
        except AttemptError:
            raise
        except Exception as exc:
            raise AttemptError(
                f"the Bedrock client could not be created: {type(exc).__name__}: {exc}",
                retryable=False,
            ) from None
        kwargs = converse_request(body, self._settings.bedrock_models)
        model = str(body.get("model"))
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._converse, kwargs, model)

    def _register(self) -> None:
        """Mask the credentials botocore signs with now (refreshable ones change)."""
        frozen = self._credentials.get_frozen_credentials()
        values = (frozen.access_key, frozen.secret_key, frozen.token)
        if values != self._seen:
            with self._lock:
                register_credentials(frozen)
                self._seen = values

    def _converse(self, kwargs: dict[str, Any], model: str) -> Completion:
        from botocore import exceptions as bx
        from botocore.parsers import ResponseParserError

        try:
            self._register()
            data = self._client.converse(**kwargs)
        except bx.ClientError as exc:
            error = exc.response.get("Error") or {}
            meta = exc.response.get("ResponseMetadata") or {}
            raise attempt_error(
                str(error.get("Code") or "ClientError"),
                str(error.get("Message") or ""),
                meta.get("HTTPStatusCode"),
                model,
            ) from None
        except (bx.NoCredentialsError, bx.PartialCredentialsError, bx.CredentialRetrievalError,
                bx.TokenRetrievalError) as exc:
            raise AttemptError(
                f"AWS credentials: {exc} (standard chain: {CHAIN})", retryable=False
            ) from None
        except (bx.ConnectionError, bx.HTTPClientError) as exc:
            raise AttemptError(f"connection error: {type(exc).__name__}: {exc}", retryable=True) from None
        except BodyTooLarge as exc:
            raise exc.attempt_error() from None
        except NotAnObject as exc:
            if 200 <= exc.status < 300:
                raise malformed(f"expected a Converse response object, got JSON {exc.kind}") from None
            # An error reply keeps its status (a 400 is not retried, a 503 is).
            raise attempt_error("UnknownError", f"error body is JSON {exc.kind}, not an object",
                                exc.status, model) from None
        except ResponseParserError as exc:
            raise malformed(f"{type(exc).__name__}: {exc}") from None
        except bx.ParamValidationError as exc:
            raise AttemptError(f"invalid Converse request: {exc}", retryable=False) from None
        except (TypeError, AttributeError, ValueError, OverflowError, KeyError, IndexError) as exc:
            # botocore's parser trusts the reply's shape: a body of null or a list, or a
            # count of "abc", NaN or 1e400 (int() of it) fails inside it with these.
            raise malformed(f"{type(exc).__name__}: {exc}") from None
        return completion_from_converse(data, model)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()
        self._executor.shutdown(wait=False, cancel_futures=True)


class _CappedRaw:
    """The HTTP response's raw stream, raising BodyTooLarge past ``limit`` bytes
    (botocore reads a reply whole, through ``raw.stream()``)."""

    def __init__(self, raw: Any, limit: int) -> None:
        self._raw = raw
        self._limit = limit

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        size = 0
        for chunk in self._raw.stream(*args, **kwargs):
            size += len(chunk)
            if size > self._limit:
                raise BodyTooLarge(self._limit)
            yield chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class NotAnObject(Exception):
    """A reply whose JSON body is not an object (null, a list, a number): botocore's
    parser would fail on it with a bare TypeError or AttributeError."""

    def __init__(self, status: int, kind: str) -> None:
        super().__init__(kind)
        self.status = status
        self.kind = kind


def _check_object(status: int, content: bytes) -> None:
    if content.lstrip()[:1] in (b"{", b""):
        return
    try:
        data = json.loads(content)
    except ValueError:
        return  # not JSON at all: botocore's parser says so (ResponseParserError)
    kind = {type(None): "null", list: "array", str: "string", bool: "boolean"}.get(type(data), "number")
    raise NotAnObject(status, kind)


def cap_response_bodies(client: Any, limit: int) -> bool:
    """Send through the client's own HTTP session from botocore's ``before-send`` event,
    refusing a body announced or grown past ``limit`` (``evals_max_response_bytes``)
    before it fills memory. botocore keeps its session on the endpoint, which it does not
    document: with a botocore that has none there, bodies are not capped (False).

    The session reads a reply whole inside ``send()`` unless the request asks for a
    streamed output, and a chunked reply announces no length: so the request is sent as
    streamed, and the body is read here, through the cap."""
    http = getattr(getattr(client, "_endpoint", None), "http_session", None)
    if http is None or not hasattr(http, "send"):
        return False

    def send(request: Any, **_: Any) -> Any:
        buffered = not getattr(request, "stream_output", False)
        request.stream_output = True
        try:
            response = http.send(request)
        finally:
            request.stream_output = not buffered
        try:
            check_length(response.headers, limit)
            response.raw = _CappedRaw(response.raw, limit)
            if buffered:
                # read now, through the cap (botocore keeps it for its parser)
                _check_object(response.status_code, response.content)
        except BodyTooLarge:
            # The rest of the body is never read: the connection cannot be reused.
            close = getattr(getattr(response.raw, "_raw", response.raw), "close", None)
            if close is not None:
                close()
            raise
        return response

    client.meta.events.register(f"before-send.{SERVICE}.Converse", send)
    return True
