"""An OpenAI-compatible chat server on loopback, for tests and benchmarks.

It answers ``POST /v1/chat/completions`` like the real API (same JSON shape, ``usage``
fields, error bodies) after a configurable latency, and can misbehave on purpose:
429 with ``Retry-After``, 500, malformed bodies and requests that never answer, each
with a probability drawn from a seeded generator. It counts what it receives, so tests
can assert on the server side: how many requests arrived, how many were answered, how
many were in flight at once, and which prompts were asked more than once.

Two ways to run it, same behaviour:

- in-process, on its own thread and event loop::

      with FakeOpenAI(latency=0.05, responder="echo") as server:
          client = AsyncOpenAI(base_url=server.base_url, api_key="x")
          ...
          assert server.stats()["answered"] == 10

- as a subprocess (benchmarks, or when the client under test must not share the GIL)::

      with spawn_fake_openai(latency=0.1) as server:   # python -m pytest_evals.testing.fake_openai
          ...

Introspection endpoints: ``GET /_stats``, ``GET /_log``, ``POST /_reset``,
``POST /_config`` (JSON with any :class:`ServerConfig` field). The API is documented in
``docs/llm.md`` and kept stable for other test suites.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from pytest_evals.testing.fake_batches import BatchStore

#: A responder turns the request JSON into the assistant's reply text, or into
#: ``{"content": text, "logprobs": {"content": [...]}}`` to answer with log-probabilities.
Responder = Callable[[dict[str, Any]], Any]

URL_LINE_PREFIX = "FAKE_OPENAI_URL "


def last_user_message(request: Mapping[str, Any]) -> str:
    """Text of the last ``user`` message (content parts are joined)."""
    for message in reversed(request.get("messages") or []):
        if isinstance(message, Mapping) and message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return "" if content is None else str(content)


def echo_responder(request: dict[str, Any]) -> str:
    """Reply with the last user message."""
    return last_user_message(request)


def yes_responder(request: dict[str, Any]) -> str:
    return "Yes"


def model_echo_responder(request: dict[str, Any]) -> str:
    """``[model] last user message``: answers differ per model, so cache mix-ups show."""
    return f"[{request.get('model')}] {last_user_message(request)}"


def json_echo_responder(request: dict[str, Any]) -> str:
    return json.dumps({"echo": last_user_message(request), "model": request.get("model")})


def model_yes_no_responder(request: dict[str, Any]) -> str:
    """"yes" or "no", a fixed function of (model, last user message): each model answers
    every prompt the same way every time, and models disagree on about half of them."""
    key = f"{request.get('model')}\n{last_user_message(request)}".encode("utf-8", "surrogatepass")
    return "yes" if hashlib.sha256(key).digest()[0] & 1 else "no"


BUILTIN_RESPONDERS: dict[str, Responder] = {
    "model-yes-no": model_yes_no_responder,
    "echo": echo_responder,
    "yes": yes_responder,
    "model-echo": model_echo_responder,
    "json-echo": json_echo_responder,
}


def resolve_responder(spec: str | Responder) -> Responder:
    """A built-in name (echo, yes, model-echo, json-echo, model-yes-no) or ``"package.module:function"``."""
    if callable(spec):
        return spec
    if spec in BUILTIN_RESPONDERS:
        return BUILTIN_RESPONDERS[spec]
    from pytest_evals.registry.dotted_names import ResolveError, resolve_name

    if ":" not in spec:
        raise ValueError(
            f"responder {spec!r}: expected one of {sorted(BUILTIN_RESPONDERS)} or 'module:function'"
        )
    try:
        func: Responder = resolve_name(spec, "responder")
    except ResolveError as exc:
        raise ValueError(str(exc)) from exc
    if not callable(func):
        raise ValueError(f"responder {spec!r} is not callable")
    return func


@dataclass
class ScriptRule:
    """Reply ``reply`` when ``pattern`` matches (re.search) the last user message."""

    pattern: str
    reply: str


@dataclass
class ServerConfig:
    """Everything that shapes the server's behaviour; all fields can change at run time."""

    #: Seconds before each answer (and before each injected error).
    latency: float = 0.0
    #: Uniform extra latency in [0, latency_jitter).
    latency_jitter: float = 0.0
    #: Requests worked on at once (0: no limit). With 1 the server queues like llama.cpp
    #: with one slot: the latency is spent one request at a time, and a request whose
    #: client gave up still holds its slot until it is done.
    slots: int = 0
    #: The model's context in (fake) tokens (0: no limit): a longer prompt plus its
    #: ``max_tokens`` gets OpenAI's and vLLM's HTTP 400 ``context_length_exceeded``.
    max_context: int = 0
    #: Model ids ``GET /v1/models`` lists, comma-separated (default none: the fake
    #: answers whatever model a request names).
    served_models: str = ""
    #: Which ``response_format`` types each model takes, as ``MODEL=KIND|KIND;MODEL=...``
    #: with KIND one of ``json_schema``, ``json_object+schema`` (llama-cpp-python's
    #: ``{"type": "json_object", "schema": ...}``) and ``json_object`` (one gateway in front
    #: of models that differ). A listed model given another type gets HTTP 400 naming it;
    #: a request without a format is always answered; unlisted models take every type.
    response_formats: str = ""
    #: Which server's self-description to imitate: "openai" (``/v1/models`` ids only),
    #: "llama.cpp" (also ``GET /props`` with ``total_slots`` and
    #: ``default_generation_settings.n_ctx``) or "vllm" (``max_model_len`` per model).
    server_kind: str = "openai"
    #: False: the files and batches endpoints answer 404 ``{"detail": "Not Found"}``, as
    #: llama.cpp's, vLLM's and Ollama's servers do (they have no Batch API).
    batch_api: bool = True
    #: Built-in responder name, "module:function" or a callable (request JSON -> reply text).
    responder: str | Responder = "echo"
    #: Scripted replies, tried in order before the responder.
    script: list[ScriptRule] = field(default_factory=list)
    #: Fault probabilities per attempt; they are tried in this order on one draw.
    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_malformed: float = 0.0
    rate_hang: float = 0.0
    #: Seconds announced in ``Retry-After`` (and ``retry-after-ms``) on a 429.
    retry_after: float = 0.05
    #: How long a "hang" holds the connection before it is closed unanswered.
    hang_seconds: float = 3600.0
    #: Fail the first N attempts of every distinct request body with ``fail_status``.
    fail_first: int = 0
    fail_status: int = 500
    #: Seed of the fault draws; a draw depends on (seed, body, attempt number) only.
    seed: int = 0
    #: When set, requests must carry ``Authorization: Bearer <require_key>`` (else 401,
    #: with an error body that repeats the key it was given, as some gateways do).
    require_key: str | None = None
    #: When set (``name=value&...``), every API request (not the ``/_*`` introspection
    #: endpoints) must carry these query parameters, as a gateway that takes
    #: ``?api-version=`` or ``?key=``; else 401 naming the first one missing.
    require_query: str = ""
    #: Append one JSON line per request to this file (works across processes).
    log_file: str | None = None
    #: Batch API (see fake_batches.py): seconds a batch stays in progress, share of
    #: lines that fail, share answered before the batch expires, most lines per batch.
    batch_delay: float = 0.0
    batch_failure_rate: float = 0.0
    batch_complete_fraction: float = 1.0
    batch_max_lines: int = 50_000

    def update(self, changes: Mapping[str, Any]) -> None:
        known = {f.name for f in fields(self)}
        for key, value in changes.items():
            if key not in known:
                raise ValueError(f"unknown server setting {key!r}; known: {sorted(known)}")
            if key == "script":
                value = [v if isinstance(v, ScriptRule) else ScriptRule(**v) for v in value]
            setattr(self, key, value)

    def public(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["script"] = [asdict(rule) for rule in self.script]
        if callable(self.responder):
            data["responder"] = getattr(self.responder, "__name__", type(self.responder).__name__)
        data["require_key"] = "***" if self.require_key else None
        data["require_query"] = "***" if self.require_query else ""
        return data


class _State:
    """Counters and the request log (touched only from the server's loop thread)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.received = 0
        self.answered = 0
        self.outcomes: Counter[str] = Counter()
        #: GETs of /v1/models and /props (not completions: not in received/outcomes).
        self.probes: Counter[str] = Counter()
        #: API requests per path that carried ``require_query``, and those refused without it.
        self.queried: Counter[str] = Counter()
        self.query_refused = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.attempts_per_body: Counter[str] = Counter()
        self.log: list[dict[str, Any]] = []
        self.started = time.monotonic()

    def stats(self) -> dict[str, Any]:
        return {
            "received": self.received,
            "answered": self.answered,
            "outcomes": dict(self.outcomes),
            "probes": dict(self.probes),
            "queried": dict(self.queried),
            "query_refused": self.query_refused,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "distinct_requests": len(self.attempts_per_body),
            "uptime": time.monotonic() - self.started,
        }


def _fake_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def reply_text(reply: Any) -> str:
    """The text of a responder's reply (a string, or a mapping with ``content``)."""
    return str(reply.get("content", "")) if isinstance(reply, Mapping) else str(reply)


def _prompt_tokens(request: dict[str, Any]) -> int:
    prompt_text = "".join(
        _content_text(m.get("content"))
        for m in request.get("messages") or []
        if isinstance(m, Mapping)
    )
    return _fake_tokens(prompt_text) + 4 * len(request.get("messages") or [])


def _completion_body(request: dict[str, Any], reply: Any, n: int) -> dict[str, Any]:
    logprobs = reply.get("logprobs") if isinstance(reply, Mapping) else None
    # A responder may say the reply was cut ({"content": ..., "finish_reason": "length"}).
    finish = str(reply.get("finish_reason") or "stop") if isinstance(reply, Mapping) else "stop"
    reply = reply_text(reply)
    prompt_tokens = _prompt_tokens(request)
    completion_tokens = _fake_tokens(reply)
    return {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "unknown"),
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply, "refusal": None},
                "logprobs": logprobs,
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def format_kind(request: Mapping[str, Any]) -> str | None:
    """``json_schema``, ``json_object+schema``, ``json_object`` (None: no format asked)."""
    fmt = request.get("response_format")
    if not isinstance(fmt, Mapping):
        return None
    kind = str(fmt.get("type"))
    return kind + "+schema" if kind == "json_object" and "schema" in fmt else kind


def format_refusal(spec: str, request: Mapping[str, Any]) -> str | None:
    """The refusal's message when the request's model does not take its format."""
    kind = format_kind(request)
    if kind is None or kind == "text" or not spec.strip():
        return None
    model = str(request.get("model"))
    for entry in spec.split(";"):
        name, _, kinds = entry.partition("=")
        if name.strip() == model:
            if kind in {k.strip() for k in kinds.split("|")}:
                return None
            return f"'response_format' of type '{kind}' is not supported with model {model}"
    return None


def _error_body(message: str, type_: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


_MALFORMED: tuple[tuple[str, str], ...] = (
    (
        '{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"index": 0, "mess',
        "application/json",
    ),
    ("<html><body>502 Bad Gateway</body></html>", "text/html"),
    ('{"id": "chatcmpl-nochoices", "object": "chat.completion"}', "application/json"),
)


class FakeOpenAIApp:
    """The aiohttp application; :class:`FakeOpenAI` and the CLI both serve it."""

    #: How a chat completion's JSON is shaped, live and in batch output lines (a test may
    #: replace it on an instance to shape every reply).
    completion_body = staticmethod(_completion_body)

    def __init__(self, config: ServerConfig | None = None) -> None:
        self.config = config or ServerConfig()
        #: (slots, semaphore) of the queue when ``slots`` is set; made on the server's loop.
        self._slots: tuple[int, asyncio.Semaphore] | None = None
        self.state = _State()
        self._responder_spec: str | Responder | None = None
        self._responder: Responder = echo_responder
        self._log_lock = threading.Lock()
        self.batches = BatchStore(self)

    def build(self) -> web.Application:
        # Request bodies up to OpenAI's 200 MB batch input file (uploaded in one request)
        # plus form overhead: a 35,000-item HaluEval batch is ~82 MB.
        app = web.Application(client_max_size=256 * 1024 * 1024, middlewares=[self._required_query, self._no_batch_api])
        app.router.add_post("/v1/chat/completions", self.chat_completions)
        app.router.add_post("/chat/completions", self.chat_completions)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/props", self.props)
        app.router.add_get("/_stats", self.get_stats)
        app.router.add_get("/_log", self.get_log)
        app.router.add_post("/_reset", self.post_reset)
        app.router.add_post("/_config", self.post_config)
        self.batches.routes(app)
        return app

    @web.middleware
    async def _required_query(self, request: web.Request, handler: Any) -> web.StreamResponse:
        wanted = self.config.require_query
        if wanted and not request.path.startswith("/_"):
            for name, value in parse_qsl(wanted, keep_blank_values=True):
                if value not in request.query.getall(name, []):
                    self.state.query_refused += 1
                    return web.json_response(
                        _error_body(
                            f"missing or wrong query parameter {name!r}",
                            "invalid_request_error",
                            "invalid_api_key",
                        ),
                        status=401,
                    )
            self.state.queried[request.path] += 1
        return await handler(request)

    @web.middleware
    async def _no_batch_api(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if not self.config.batch_api and re.search(r"/(files|batches)(/|$)", request.path):
            self.state.probes["no_batch_api"] += 1
            return web.json_response({"detail": "Not Found"}, status=404)
        return await handler(request)

    # -- behaviour --------------------------------------------------------------------
    def responder(self) -> Responder:
        spec = self.config.responder
        if spec != self._responder_spec:
            self._responder = resolve_responder(spec)
            self._responder_spec = spec
        return self._responder

    def reply_for(self, request: dict[str, Any]) -> Any:
        if self.config.script:
            text = last_user_message(request)
            for rule in self.config.script:
                if re.search(rule.pattern, text):
                    return rule.reply
        return self.responder()(request)

    def draw_fault(self, body_hash: str, attempt: int) -> str | None:
        cfg = self.config
        if attempt <= cfg.fail_first:
            return f"status_{cfg.fail_status}"
        rng = random.Random(f"{cfg.seed}:{body_hash}:{attempt}")
        x = rng.random()
        for name, rate in (
            ("429", cfg.rate_429),
            ("500", cfg.rate_500),
            ("malformed", cfg.rate_malformed),
            ("hang", cfg.rate_hang),
        ):
            if x < rate:
                return name
            x -= rate
        return None

    def _write_log(self, entry: dict[str, Any]) -> None:
        self.state.log.append(entry)
        if self.config.log_file:
            line = json.dumps(entry) + "\n"
            with self._log_lock, open(self.config.log_file, "a", encoding="utf-8") as fh:
                fh.write(line)

    # -- handlers ---------------------------------------------------------------------
    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        state, cfg = self.state, self.config
        raw = await request.read()
        state.received += 1
        n = state.received
        state.in_flight += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
        entry: dict[str, Any] = {"n": n, "t": time.time(), "pid": os.getpid(), "outcome": "ok"}
        try:
            body_hash = hashlib.sha256(raw).hexdigest()
            state.attempts_per_body[body_hash] += 1
            attempt = state.attempts_per_body[body_hash]
            entry.update(body=body_hash[:16], attempt=attempt)
            try:
                payload = json.loads(raw)
                if not isinstance(payload, dict):
                    raise ValueError("body is not an object")
            except ValueError as exc:
                self._record(entry, "bad_request")
                return web.json_response(
                    _error_body(f"invalid JSON body: {exc}", "invalid_request_error"), status=400
                )
            entry.update(model=payload.get("model"), prompt=last_user_message(payload)[:200])
            if cfg.require_key is not None:
                auth = request.headers.get("Authorization", "")
                if auth != f"Bearer {cfg.require_key}":
                    self._record(entry, "unauthorized")
                    given = auth.removeprefix("Bearer ")
                    return web.json_response(
                        _error_body(
                            f"Incorrect API key provided: {given}.",
                            "invalid_request_error",
                            "invalid_api_key",
                        ),
                        status=401,
                    )
            refusal = format_refusal(cfg.response_formats, payload)
            if refusal is not None:
                self._record(entry, "format_refused")
                return web.json_response(
                    _error_body(refusal, "invalid_request_error", "unsupported_response_format"),
                    status=400,
                )
            if cfg.max_context > 0:
                wanted = _prompt_tokens(payload) + int(payload.get("max_tokens") or 0)
                if wanted > cfg.max_context:
                    self._record(entry, "context_length")
                    return web.json_response(
                        _error_body(
                            f"This model's maximum context length is {cfg.max_context} tokens. "
                            f"However, you requested {wanted} tokens. Please reduce the length "
                            "of the messages.",
                            "invalid_request_error",
                            "context_length_exceeded",
                        ),
                        status=400,
                    )
            delay = cfg.latency + (
                random.random() * cfg.latency_jitter if cfg.latency_jitter else 0.0
            )
            if cfg.slots > 0:
                if self._slots is None or self._slots[0] != cfg.slots:
                    self._slots = (cfg.slots, asyncio.Semaphore(cfg.slots))
                async with self._slots[1]:
                    await asyncio.sleep(delay)
            elif delay > 0:
                await asyncio.sleep(delay)
            fault = self.draw_fault(body_hash, attempt)
            if fault is not None:
                # Recorded now: a hang may never reach the end of this handler.
                self._record(entry, fault)
                return await self._fault_response(fault, n)
            try:
                reply = self.reply_for(payload)
            except Exception as exc:  # a broken responder is a server error, not a crash
                self._record(entry, "responder_error")
                return web.json_response(
                    _error_body(f"responder failed: {type(exc).__name__}: {exc}", "server_error"),
                    status=500,
                )
            state.answered += 1
            entry["reply"] = reply_text(reply)[:200]
            self._record(entry, "ok")
            return web.json_response(self.completion_body(payload, reply, n))
        finally:
            state.in_flight -= 1

    def _record(self, entry: dict[str, Any], outcome: str) -> None:
        entry["outcome"] = outcome
        self.state.outcomes[outcome] += 1
        self._write_log(entry)

    async def _fault_response(self, fault: str, n: int) -> web.StreamResponse:
        cfg = self.config
        status = 429 if fault == "429" else 500 if fault == "500" else None
        if fault.startswith("status_"):
            status = int(fault.removeprefix("status_"))
        if status == 429:
            return web.json_response(
                _error_body("Rate limit reached (fake server).", "requests", "rate_limit_exceeded"),
                status=429,
                headers={
                    "Retry-After": str(max(0, math.ceil(cfg.retry_after))),
                    "retry-after-ms": str(int(cfg.retry_after * 1000)),
                },
            )
        if status is not None:
            return web.json_response(
                _error_body("The server had an error (fake).", "server_error"), status=status
            )
        if fault == "malformed":
            text, content_type = _MALFORMED[n % len(_MALFORMED)]
            return web.Response(text=text, content_type=content_type, status=200)
        # hang: hold the connection without answering; the client's deadline must end it.
        await asyncio.sleep(cfg.hang_seconds)
        return web.json_response(_error_body("hang ended", "server_error"), status=504)

    async def models(self, request: web.Request) -> web.Response:
        cfg = self.config
        self.state.probes["models"] += 1
        data: list[dict[str, Any]] = []
        for name in (m.strip() for m in cfg.served_models.split(",")):
            if not name:
                continue
            item: dict[str, Any] = {"id": name, "object": "model", "owned_by": "fake"}
            if cfg.server_kind == "vllm" and cfg.max_context:
                item["max_model_len"] = cfg.max_context
            data.append(item)
        return web.json_response({"object": "list", "data": data})

    async def props(self, request: web.Request) -> web.Response:
        """llama.cpp's ``GET /props`` (only when imitating it; others answer 404)."""
        cfg = self.config
        if cfg.server_kind != "llama.cpp":
            return web.json_response(_error_body("Not Found", "not_found_error"), status=404)
        self.state.probes["props"] += 1
        models = [m.strip() for m in cfg.served_models.split(",") if m.strip()]
        return web.json_response({
            "total_slots": cfg.slots or 1,
            "default_generation_settings": {"n_ctx": cfg.max_context or 4096},
            "model_alias": models[0] if models else "fake",
            "build_info": "fake",
        })

    async def get_stats(self, request: web.Request) -> web.Response:
        return web.json_response({**self.state.stats(), **self.batches.stats()})

    async def get_log(self, request: web.Request) -> web.Response:
        return web.json_response(self.state.log)

    async def post_reset(self, request: web.Request) -> web.Response:
        self.state.reset()
        self.batches.reset()
        return web.json_response({"ok": True})

    async def post_config(self, request: web.Request) -> web.Response:
        try:
            self.config.update(await request.json())
        except (ValueError, TypeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response(self.config.public())


class FakeOpenAI:
    """The server on a background thread of this process. Use as a context manager."""

    def __init__(
        self,
        config: ServerConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        **settings: Any,
    ) -> None:
        self.app = FakeOpenAIApp(config)
        if settings:
            self.app.config.update(settings)
        self.host, self._port = host, port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    @property
    def config(self) -> ServerConfig:
        return self.app.config

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self._port}/v1"

    def start(self) -> FakeOpenAI:
        """Start serving; after :meth:`stop`, again on the same port (a server restart)."""
        self.app._slots = None  # its semaphore belonged to the stopped loop
        loop = asyncio.new_event_loop()
        started: list[BaseException | None] = []
        ready = threading.Event()

        async def _start() -> None:
            runner = web.AppRunner(self.app.build(), access_log=None, shutdown_timeout=0.5)
            await runner.setup()
            site = web.TCPSite(runner, self.host, self._port, backlog=1024)
            await site.start()
            self._runner = runner
            self._port = int(runner.addresses[0][1])

        def _serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(_start())
                started.append(None)
            except BaseException as exc:  # reported to the starting thread
                started.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=_serve, name="fake-openai", daemon=True)
        self._thread.start()
        ready.wait(30)
        if not started or started[0] is not None:
            raise RuntimeError(
                f"fake OpenAI server did not start: {started[0] if started else 'timeout'}"
            )
        return self

    def _call(self, func: Callable[[], Any]) -> Any:
        """Run ``func`` on the server loop (state is only touched from there)."""
        assert self._loop is not None, "server not started"

        async def _run() -> Any:
            return func()

        return asyncio.run_coroutine_threadsafe(_run(), self._loop).result(10)

    def stats(self) -> dict[str, Any]:
        return dict(self._call(lambda: {**self.app.state.stats(), **self.app.batches.stats()}))

    def log(self) -> list[dict[str, Any]]:
        return list(self._call(lambda: list(self.app.state.log)))

    def reset(self) -> None:
        def both() -> None:
            self.app.state.reset()
            self.app.batches.reset()

        self._call(both)

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
            # Hung handlers (fault injection) may outlive the runner's grace period.
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(_shutdown(), loop).result(15)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        loop.close()
        self._loop = None

    def restart(self, down: float) -> None:
        """Stop (connections in flight are cut, new ones refused), stay down ``down``
        seconds, and serve again on the same port: a local server restarting."""
        self.stop()
        time.sleep(down)
        self.start()

    def __enter__(self) -> FakeOpenAI:
        return self.start() if self._loop is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- subprocess mode --------------------------------------------------------------------
def _http_json(url: str, data: Mapping[str, Any] | None = None) -> Any:
    body = None if data is None else json.dumps(data).encode()
    req = urllib.request.Request(url, data=body, method="GET" if data is None else "POST")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


class FakeOpenAIProcess:
    """Handle on a server running in a subprocess; same inspection methods as FakeOpenAI."""

    def __init__(self, process: subprocess.Popen[str], base_url: str) -> None:
        self.process = process
        self.base_url = base_url
        self.root = base_url.rsplit("/v1", 1)[0]
        self.port = int(self.root.rsplit(":", 1)[1])

    def stats(self) -> dict[str, Any]:
        return dict(_http_json(f"{self.root}/_stats"))

    def log(self) -> list[dict[str, Any]]:
        return list(_http_json(f"{self.root}/_log"))

    def reset(self) -> None:
        _http_json(f"{self.root}/_reset", {})

    def configure(self, **changes: Any) -> None:
        _http_json(f"{self.root}/_config", changes)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def __enter__(self) -> FakeOpenAIProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def config_to_argv(settings: Mapping[str, Any]) -> list[str]:
    argv: list[str] = []
    for key, value in settings.items():
        if value is None:
            continue
        if key == "script":
            argv += [
                "--script-json",
                json.dumps([asdict(r) if isinstance(r, ScriptRule) else r for r in value]),
            ]
        else:
            argv += [f"--{key.replace('_', '-')}", str(value)]
    return argv


@contextlib.contextmanager
def spawn_fake_openai(
    port: int = 0, env: Mapping[str, str] | None = None, **settings: Any
) -> Iterator[FakeOpenAIProcess]:
    """Start ``python -m pytest_evals.testing.fake_openai`` and yield a handle on it."""
    ServerConfig().update(settings)  # fail early on a misspelt setting
    cmd = [
        sys.executable,
        "-m",
        "pytest_evals.testing.fake_openai",
        "--port",
        str(port),
        *config_to_argv(settings),
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith(URL_LINE_PREFIX):
        proc.kill()
        raise RuntimeError(f"fake OpenAI server failed to start (printed {line!r})")
    handle = FakeOpenAIProcess(proc, line[len(URL_LINE_PREFIX) :].strip())
    try:
        yield handle
    finally:
        handle.stop()


def _parse_bool(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pytest_evals.testing.fake_openai",
        description="OpenAI-compatible chat server on loopback for tests and benchmarks.",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on stdout)")
    defaults = ServerConfig()
    for f in fields(ServerConfig):
        if f.name == "script":
            continue
        default = getattr(defaults, f.name)
        kind: Callable[[str], Any] = type(default) if default is not None else str
        if isinstance(default, bool):
            kind = _parse_bool
        p.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=kind, default=default)
    p.add_argument("--script", dest="script_file", help="JSON file: [{pattern, reply}, ...]")
    p.add_argument("--script-json", dest="script_json", help="the same list inline")
    p.add_argument("--require-key-env", help="read the required API key from this env var")
    return p


async def _serve_forever(args: argparse.Namespace, config: ServerConfig) -> None:
    app = FakeOpenAIApp(config)
    runner = web.AppRunner(app.build(), access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port, backlog=1024)
    await site.start()
    port = runner.addresses[0][1]
    print(f"{URL_LINE_PREFIX}http://{args.host}:{port}/v1", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    args = build_arg_parser().parse_args(argv)
    config = ServerConfig()
    values = {f.name: getattr(args, f.name) for f in fields(ServerConfig) if f.name != "script"}
    if args.require_key_env:
        values["require_key"] = os.environ[args.require_key_env]
    script: list[Any] = []
    if args.script_file:
        with open(args.script_file, encoding="utf-8") as fh:
            script = json.load(fh)
    elif args.script_json:
        script = json.loads(args.script_json)
    values["script"] = script
    config.update(values)
    resolve_responder(config.responder)  # fail at start, not on the first request
    asyncio.run(_serve_forever(args, config))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
