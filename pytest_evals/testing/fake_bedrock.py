"""A loopback fake of AWS Bedrock's runtime Converse API, for tests.

botocore talks to it as to AWS (``endpoint_url``): real HTTP on 127.0.0.1, real SigV4-
signed requests to ``POST /model/{modelId}/converse``, replies and errors in the
service's JSON shape (``x-amzn-ErrorType`` + ``{"message": ...}``), so botocore's own
parser turns them into ``ClientError`` codes. The ``Authorization`` header must be
there and be SigV4 (else 403 ``MissingAuthenticationTokenException``); the server looks
at its credential scope only to compare the access key id when ``require_access_key`` is
set, and never keeps the header or any part of it.

Scripted faults, per distinct request body (so retries of one request see them in
order): ``throttle_first`` 429 ``ThrottlingException``s, then ``unavailable_first`` 503
``ServiceUnavailableException``s, then ``fail_first`` errors of ``fail_code`` saying ``fail_message``, then
``malformed_first`` 200 replies that are not JSON; plus
``latency``. ``known_models`` (when set) makes any other model id a 400
``ValidationException`` as Bedrock sends for an invalid model identifier.

The reply comes from a responder, as in :mod:`.fake_openai` (the same built-in names,
``"module:function"`` or a callable), which sees the request in the OpenAI shape
(``model``, ``messages`` with a ``system`` message first, ``temperature``,
``max_tokens``), so one responder serves both fakes::

    with FakeBedrock(responder="echo", throttle_first=2) as server:
        server.endpoint_url        # "http://127.0.0.1:<port>" (botocore's endpoint_url)
        server.stats(), server.log(), server.reset(), server.configure(latency=0.1)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from aiohttp import web

from pytest_evals.testing.fake_openai import Responder, reply_text, resolve_responder

#: Error code -> HTTP status, as Bedrock's runtime sends them.
ERROR_STATUS = {
    "ThrottlingException": 429,
    "ServiceUnavailableException": 503,
    "InternalServerException": 500,
    "ModelTimeoutException": 408,
    "ValidationException": 400,
    "AccessDeniedException": 403,
    "ResourceNotFoundException": 404,
    "UnrecognizedClientException": 403,
    "MissingAuthenticationTokenException": 403,
}


@dataclass
class BedrockConfig:
    """What shapes the fake's behaviour; every field can change at run time."""

    latency: float = 0.0
    responder: str | Responder = "echo"
    #: Per distinct body: this many 429 ThrottlingException first...
    throttle_first: int = 0
    #: ...then this many 503 ServiceUnavailableException...
    unavailable_first: int = 0
    #: ...then this many errors of ``fail_code`` (its status from ERROR_STATUS).
    fail_first: int = 0
    fail_code: str = "InternalServerException"
    fail_message: str = "The fake failed as scripted."
    #: ...then this many 200 replies whose body is not JSON (an HTML error page).
    malformed_first: int = 0
    #: Model ids served (None: any); another id is Bedrock's 400 for an invalid model.
    known_models: list[str] | None = None
    #: When set, the SigV4 credential scope must name this access key id (else 403
    #: UnrecognizedClientException, as AWS answers an unknown key).
    require_access_key: str | None = None
    #: A stop reason to send instead of ``end_turn`` (e.g. ``max_tokens``).
    stop_reason: str = "end_turn"

    def update(self, changes: Mapping[str, Any]) -> None:
        known = {f.name for f in fields(self)}
        for key, value in changes.items():
            if key not in known:
                raise ValueError(f"unknown fake Bedrock setting {key!r}; known: {sorted(known)}")
            setattr(self, key, value)


@dataclass
class _State:
    received: int = 0
    answered: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    attempts: Counter[str] = field(default_factory=Counter)
    signed: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)
    #: Requests to anything but Converse (method, path, whether a Bearer token came).
    other: list[tuple[str, str, bool]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0


def _text(blocks: Any) -> str:
    if not isinstance(blocks, list):
        return ""
    return "".join(str(b.get("text", "")) for b in blocks if isinstance(b, Mapping))


def openai_view(model: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """A Converse request as the OpenAI-shaped request the responders read."""
    messages: list[dict[str, Any]] = []
    system = _text(request.get("system"))
    if system:
        messages.append({"role": "system", "content": system})
    for message in request.get("messages") or []:
        if isinstance(message, Mapping):
            messages.append({"role": message.get("role"), "content": _text(message.get("content"))})
    view: dict[str, Any] = {"model": model, "messages": messages}
    inference = request.get("inferenceConfig") or {}
    if "temperature" in inference:
        view["temperature"] = inference["temperature"]
    if "maxTokens" in inference:
        view["max_tokens"] = inference["maxTokens"]
    return view


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def _access_key_of(authorization: str) -> str | None:
    """The access key id in a SigV4 header's ``Credential=<id>/<date>/...`` (not kept)."""
    _, _, rest = authorization.partition("Credential=")
    return rest.split("/", 1)[0] or None if rest else None


class FakeBedrockApp:
    def __init__(self, config: BedrockConfig | None = None) -> None:
        self.config = config or BedrockConfig()
        self.state = _State()
        self._responder_spec: Any = None
        self._responder: Responder | None = None

    def build(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/model/{model_id}/converse", self.converse)
        app.router.add_route("*", "/{tail:.*}", self.elsewhere)
        return app

    async def elsewhere(self, request: web.Request) -> web.Response:
        """Not Bedrock's runtime API: recorded (a client must not probe AWS OpenAI-style)."""
        bearer = request.headers.get("Authorization", "").startswith("Bearer ")
        self.state.other.append((request.method, request.path, bearer))
        return self.error("UnknownOperationException", "unknown operation")

    def responder(self) -> Responder:
        if self._responder is None or self._responder_spec is not self.config.responder:
            self._responder = resolve_responder(self.config.responder)
            self._responder_spec = self.config.responder
        return self._responder

    @staticmethod
    def error(code: str, message: str) -> web.Response:
        return web.json_response(
            {"message": message},
            status=ERROR_STATUS.get(code, 500),
            headers={"x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/"},
        )

    async def converse(self, request: web.Request) -> web.Response:
        state, cfg = self.state, self.config
        raw = await request.read()
        state.received += 1
        model = request.match_info["model_id"]
        entry: dict[str, Any] = {"n": state.received, "t": time.time(), "model": model}
        authorization = request.headers.get("Authorization", "")
        signed = authorization.startswith("AWS4-HMAC-SHA256 ") and "Signature=" in authorization
        entry["signed"] = signed
        if not signed:
            return self._record(entry, "unsigned", self.error(
                "MissingAuthenticationTokenException", "Missing Authentication Token"))
        state.signed += 1
        wrong_key = cfg.require_access_key is not None and _access_key_of(authorization) != cfg.require_access_key
        del authorization  # never kept
        if wrong_key:
            return self._record(entry, "unrecognized", self.error(
                "UnrecognizedClientException", "The security token included in the request is invalid."))
        try:
            payload = json.loads(raw)
            if not isinstance(payload, dict):
                raise ValueError("body is not an object")
        except ValueError as exc:
            return self._record(entry, "bad_request", self.error("ValidationException", f"invalid body: {exc}"))
        body_hash = hashlib.sha256(model.encode() + b"\0" + raw).hexdigest()
        state.attempts[body_hash] += 1
        attempt = state.attempts[body_hash]
        view = openai_view(model, payload)
        entry.update(body=body_hash[:16], attempt=attempt,
                     prompt=next((m["content"] for m in reversed(view["messages"]) if m["role"] == "user"), "")[:200])
        if cfg.latency > 0:
            await asyncio.sleep(cfg.latency)
        if cfg.known_models is not None and model not in cfg.known_models:
            return self._record(entry, "unknown_model", self.error(
                "ValidationException", "The provided model identifier is invalid."))
        if attempt <= cfg.throttle_first:
            return self._record(entry, "throttled", self.error(
                "ThrottlingException", "Too many requests, please wait before trying again."))
        if attempt <= cfg.throttle_first + cfg.unavailable_first:
            return self._record(entry, "unavailable", self.error(
                "ServiceUnavailableException", "Bedrock is unable to process your request."))
        if attempt <= cfg.throttle_first + cfg.unavailable_first + cfg.fail_first:
            return self._record(entry, cfg.fail_code, self.error(cfg.fail_code, cfg.fail_message))
        if attempt <= cfg.throttle_first + cfg.unavailable_first + cfg.fail_first + cfg.malformed_first:
            return self._record(entry, "malformed", web.Response(
                text="<html><body>502 Bad Gateway</body></html>", content_type="application/json"))
        try:
            reply = reply_text(self.responder()(view))
        except Exception as exc:  # a broken responder is a server error, not a crash
            return self._record(entry, "responder_error", self.error(
                "InternalServerException", f"responder failed: {type(exc).__name__}: {exc}"))
        prompt = "".join(str(m["content"]) for m in view["messages"])
        usage = {"inputTokens": _tokens(prompt) + 4 * len(view["messages"]), "outputTokens": _tokens(reply)}
        usage["totalTokens"] = usage["inputTokens"] + usage["outputTokens"]
        state.answered += 1
        state.input_tokens += usage["inputTokens"]
        state.output_tokens += usage["outputTokens"]
        entry["reply"] = reply[:200]
        return self._record(entry, "ok", web.json_response({
            "output": {"message": {"role": "assistant", "content": [{"text": reply}]}},
            "stopReason": cfg.stop_reason,
            "usage": usage,
            "metrics": {"latencyMs": int(cfg.latency * 1000)},
        }))

    def _record(self, entry: dict[str, Any], outcome: str, response: web.Response) -> web.Response:
        entry["outcome"] = outcome
        self.state.outcomes[outcome] += 1
        self.state.log.append(entry)
        return response


class FakeBedrock:
    """The server on a background thread of this process. Use as a context manager."""

    def __init__(self, config: BedrockConfig | None = None, *, host: str = "127.0.0.1", **settings: Any) -> None:
        self.app = FakeBedrockApp(config)
        if settings:
            self.app.config.update(settings)
        self.host = host
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    @property
    def config(self) -> BedrockConfig:
        return self.app.config

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> FakeBedrock:
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failure: list[BaseException] = []

        async def _start() -> None:
            runner = web.AppRunner(self.app.build(), access_log=None, shutdown_timeout=0.5)
            await runner.setup()
            site = web.TCPSite(runner, self.host, 0, backlog=1024)
            await site.start()
            self._runner = runner
            self.port = int(runner.addresses[0][1])

        def _serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(_start())
            except BaseException as exc:  # reported to the starting thread
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=_serve, name="fake-bedrock", daemon=True)
        self._thread.start()
        ready.wait(30)
        if failure or not self.port:
            raise RuntimeError(f"fake Bedrock server did not start: {failure[0] if failure else 'timeout'}")
        return self

    def _call(self, func: Callable[[], Any]) -> Any:
        assert self._loop is not None, "server not started"

        async def _run() -> Any:
            return func()

        return asyncio.run_coroutine_threadsafe(_run(), self._loop).result(10)

    def stats(self) -> dict[str, Any]:
        def read() -> dict[str, Any]:
            s = self.app.state
            return {"received": s.received, "answered": s.answered, "outcomes": dict(s.outcomes),
                    "signed": s.signed, "distinct_requests": len(s.attempts),
                    "input_tokens": s.input_tokens, "output_tokens": s.output_tokens,
                    "other": list(s.other)}

        return dict(self._call(read))

    def log(self) -> list[dict[str, Any]]:
        return list(self._call(lambda: [dict(e) for e in self.app.state.log]))

    def reset(self) -> None:
        def clear() -> None:
            self.app.state = _State()

        self._call(clear)

    def configure(self, **changes: Any) -> None:
        self._call(lambda: self.app.config.update(changes))

    def stop(self) -> None:
        loop, runner = self._loop, self._runner
        if loop is None:
            return

        async def _shutdown() -> None:
            if runner is not None:
                with contextlib.suppress(Exception):
                    await runner.cleanup()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(_shutdown(), loop).result(15)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        loop.close()
        self._loop = None

    def __enter__(self) -> FakeBedrock:
        return self.start() if self._loop is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
