"""The LLM client every judge and generator goes through.

``await client.chat(messages, ...)`` returns a :class:`ChatResponse`. On its way it:

1. builds the request body and its cache key (every field that changes the answer);
2. answers from the cache when it can (a hit costs nothing and no slot);
3. joins an identical request already in flight in this process, or waits for one
   that another process (an xdist worker) has claimed;
4. otherwise takes one of ``concurrency`` slots (adaptive: see limiter.py) and sends
   the request, retrying 429/5xx/timeouts/connection errors/malformed bodies with
   backoff, each attempt under a hard timeout;
5. stores the answer before returning it (so a killed run never pays for it twice),
   and counts requests, tokens and cost for the case and for the process.

A request that still fails raises :class:`LLMError` (the case becomes an ERROR); errors
are never cached. The client is bound to no event loop: per-loop resources (HTTP pool,
limiter, in-flight table) are created on the loop that uses them, normally the
session's engine loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import re
import sys
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_evals.hardening import redaction as redact
from pytest_evals.llm import io_hooks
from pytest_evals.llm.cache import CacheOps, ResponseCache, cache_key
from pytest_evals.llm.call_errors import (
    ContextLengthError,
    DryRunSkip,
    EndpointUnreachable,
    LLMError,
    OfflineError,
    refuses_format,
)
from pytest_evals.llm.call_stats import LLMStats
from pytest_evals.llm.endpoint_gate import EndpointDown, EndpointGate
from pytest_evals.llm.endpoint_models import own_model
from pytest_evals.llm.endpoint_probe import EndpointInfo, probe_endpoint
from pytest_evals.llm.limiter import AdaptiveLimiter
from pytest_evals.llm.pricing import cost_of
from pytest_evals.llm.retry import AttemptError, Backoff
from pytest_evals.llm.settings import LLMSettings, display_url
from pytest_evals.llm.tokens import estimate_completion_tokens, estimate_prompt_tokens
from pytest_evals.llm.transport.http_transport import (
    AiohttpTransport,
    Completion,
    OpenAITransport,
    Transport,
)
from pytest_evals.model import case_usage as usage

if TYPE_CHECKING:
    from pytest_evals.llm.event_loop import Engine

log = logging.getLogger("pytest_evals.llm")

#: Requests in flight before the first reply: the limit then doubles each round trip while
#: replies are quick (limiter.py), so a queueing local server never gets the whole burst.
SLOW_START = 8
#: Re-sends a request may get for free (not counted as retries) because the endpoint
#: was down when it was sent: bounds a server that flaps forever.
FREE_RESENDS = 20

Messages = str | Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class ChatResponse:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: True when the answer came from the cache (or from an identical request in flight).
    cached: bool = False
    #: USD of the request at the configured prices (None: unknown model price). For a
    #: cached answer this is what it cost when it was asked; nothing was spent now.
    cost: float | None = None
    finish_reason: str | None = None
    #: The cache key (SHA-256 of the request's semantic fields) and namespace.
    key: str = ""
    namespace: str = "default"
    #: Token log-probabilities, when the request asked for them and the endpoint gave them.
    logprobs: list[dict[str, Any]] | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def normalize_messages(messages: Messages) -> list[dict[str, Any]]:
    """A prompt string becomes one user message; a list is checked and copied."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    result = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or "role" not in message:
            raise ValueError(
                f"messages[{i}]: expected a mapping with 'role' and 'content', got {message!r:.80}"
            )
        result.append(dict(message))
    if not result:
        raise ValueError("messages: at least one message is required")
    return result


if sys.version_info >= (3, 11):
    _attempt_deadline = asyncio.timeout
else:  # pragma: no cover - Python 3.10

    @contextlib.asynccontextmanager
    async def _attempt_deadline(seconds: float) -> AsyncIterator[None]:
        task = asyncio.current_task()
        assert task is not None
        handle = asyncio.get_running_loop().call_later(seconds, task.cancel)
        try:
            yield
        except asyncio.CancelledError:
            raise TimeoutError from None
        finally:
            handle.cancel()


@dataclass
class _LoopState:
    """Resources bound to one event loop."""

    limiter: AdaptiveLimiter
    gate: EndpointGate
    transport: Transport | None = None
    inflight: dict[tuple[str, str], asyncio.Future[ChatResponse]] = field(default_factory=dict)
    dry_counted: set[tuple[str, str]] = field(default_factory=set)
    #: Done when the endpoint was checked (or failed to be) on this loop.
    ready: asyncio.Future[None] | None = None
    #: Set when the first reply came back on this loop (its latency may be a model
    #: loading: not read as load).
    warmed: asyncio.Event = field(default_factory=asyncio.Event)


def resolve_transport(settings: LLMSettings) -> str:
    """The path ``--evals-transport`` names. ``auto``: the lean HTTP/1.1 client for a
    plain ``http://`` endpoint (loopback and private servers, where the client's own CPU
    shows: paired whole runs of 2,000 cases at 100 ms were 0.91x the wall time of
    aiohttp's, docs/llm.md), aiohttp for ``https://``. The helper process (``process``)
    is opt-in: in paired whole runs of 2,000 cases it was no faster (bench/bench_llm.py
    --transport-pair: process / aiohttp 1.03x)."""
    if settings.provider == "bedrock":
        return "bedrock"  # botocore's Converse call (transport/bedrock_transport.py)
    if settings.transport != "auto":
        return settings.transport
    return "lean" if settings.base_url[:7].lower() == "http://" else "aiohttp"


def make_transport(
    settings: LLMSettings,
    stats: LLMStats | None = None,
    cache: ResponseCache | None = None,
) -> Transport:
    """The transport, created on the running loop (see the transport package).
    ``cache``: the process transport's helper applies its claims and stores."""
    kind = resolve_transport(settings)
    if kind == "bedrock":
        from pytest_evals.llm.transport.bedrock_transport import BedrockTransport

        return BedrockTransport(settings)
    if kind == "process":
        from pytest_evals.llm.transport.process_transport import ProcessTransport

        return ProcessTransport(settings, stats, cache)
    if kind == "aiohttp":
        return AiohttpTransport(settings)
    if kind == "lean":
        from pytest_evals.llm.transport.lean_http import LeanHttpTransport

        return LeanHttpTransport(settings)
    return OpenAITransport(settings)


def _masked(completion: Completion) -> Completion:
    """A reply that echoes a secret (in its text, model or finish reason) is stored and
    shown masked: the cache and the reports are files like any other."""
    fields = (completion.text, completion.model, completion.finish_reason)
    if not redact.active() or not redact.dirty(fields):
        return completion
    text = redact.redact(completion.text)
    return dataclasses.replace(
        completion,
        text=text,
        model=redact.redact(completion.model),
        finish_reason=redact.redact_obj(completion.finish_reason),
        # The tokens spell the text: a secret in it may be split across tokens, where no
        # per-token mask finds it. A reply that had to be masked keeps no token log.
        logprobs=None if text != completion.text else completion.logprobs,
    )


#: How servers say a request is longer than the model's context (OpenAI and vLLM:
#: "maximum context length is N tokens"; llama.cpp: "exceed context window of N",
#: "exceeds the available context size"; others: the error code).
_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context length|context window|context size|"
    r"exceeds? (?:the )?(?:model'?s? )?context",
    re.IGNORECASE,
)
_LIMIT = re.compile(
    r"(?:maximum context length is|context window of|context size (?:of|is)|n_ctx\W*)\s*\(?(\d+)",
    re.IGNORECASE,
)


def context_overflow(error: AttemptError) -> int | None:
    """For an HTTP 400 that says the request exceeds the model's context: the limit the
    server named (0 when it named none); None for any other error."""
    if error.status != 400 or not _OVERFLOW.search(error.cause):
        return None
    found = _LIMIT.search(error.cause)
    return int(found.group(1)) if found else 0


class LLMClient:
    """Cached, concurrency-limited, retrying client for one OpenAI-compatible endpoint."""

    def __init__(self, settings: LLMSettings, *, engine: Engine | None = None) -> None:
        self.settings = settings
        self.stats = LLMStats()
        self.backoff = Backoff()
        self._engine = engine
        self._own_engine: Engine | None = None
        self._states: dict[asyncio.AbstractEventLoop, _LoopState] = {}
        self._lock = threading.Lock()
        #: What the endpoint published about itself (endpoint_probe.py), once known.
        self.endpoint: EndpointInfo | None = None
        self._probed: asyncio.Future[EndpointInfo] | None = None
        #: Where a local server's model name came from: ``server`` (it said so),
        #: ``remembered`` (an earlier run's answer; the server did not answer now).
        self.model_source: str | None = None
        #: Processes of the run sending to the same endpoint (xdist workers; set by the
        #: pytest wiring): they share its slots.
        self.processes = 1
        self.cache: ResponseCache | None = None
        if settings.cache:
            self.cache = ResponseCache(
                settings.cache_dir,
                run_id=settings.run_id,
                refresh=settings.refresh,
                claim_ttl=self.worst_case_seconds + 30,
            )

    # -- identity -------------------------------------------------------------------------
    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def base_url(self) -> str:
        """The endpoint, without credentials (safe to show)."""
        return display_url(self.settings.base_url)

    @property
    def offline(self) -> bool:
        return self.settings.offline

    @property
    def worst_case_seconds(self) -> float:
        """Upper bound of one request: every attempt times out and every wait is maximal."""
        s = self.settings
        return (s.max_retries + 1) * s.timeout + s.max_retries * self.backoff.max_wait

    def __repr__(self) -> str:
        where = "offline" if self.offline else self.base_url
        return f"LLMClient(model={self.model!r}, endpoint={where!r}, transport={self.settings.transport!r})"

    def redact(self, text: str) -> str:
        return redact.redact(text)

    # -- per-loop resources ---------------------------------------------------------------
    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None:
            with self._lock:
                state = self._states.setdefault(
                    loop,
                    _LoopState(
                        AdaptiveLimiter(
                            self.settings.concurrency,
                            deadline=self.settings.timeout,
                            initial=SLOW_START,
                        ),
                        EndpointGate(
                            self.check_endpoint,
                            outage_wait=self.settings.outage_wait,
                            where=f"LLM endpoint {self.base_url}",
                        ),
                    ),
                )
        return state

    # -- the endpoint's own limits (endpoint_probe.py, endpoint_gate.py) -------------------
    async def check_endpoint(self) -> EndpointInfo:
        """Ask the endpoint about itself (two GETs, no completion); never raises. An
        answer is taken (a server that came back may have come back with other slots)."""
        if self.settings.provider == "bedrock":
            # AWS publishes no such endpoints, and an unsigned GET would carry the OpenAI
            # key to it: botocore's own errors tell an unreachable region.
            info = EndpointInfo(True)
            self.use_endpoint(info)
            return info
        info = await probe_endpoint(self.settings.base_url, self.settings.authorization)
        if info.reachable:
            self.use_endpoint(info)
        return info

    def use_endpoint(self, info: EndpointInfo) -> None:
        """Take what the endpoint published: its own model name (when none was given
        for a local server) and its limits (applied to each loop's limiter)."""
        if not info.reachable and self.endpoint is not None and self.endpoint.reachable:
            return  # keep what an earlier answer said
        self.endpoint = info
        # A server that does not answer: the name it gave an earlier run (kept beside
        # the cache, endpoint_models.py), so a rerun the cache can answer still does.
        found = own_model(self.settings, info)
        if found is not None:
            self.model_source = found[1]
            if self.settings.model != found[0]:
                self.settings = dataclasses.replace(self.settings, model=found[0])

    def concurrency_cap(self) -> int | None:
        """The server's slots shared among the run's processes (xdist workers)."""
        info = self.endpoint
        if info is None or not info.slots:
            return None
        return max(1, math.ceil(info.slots / max(1, self.processes)))

    async def _known_endpoint(self) -> EndpointInfo:
        """The endpoint's answer, asked once per client (shared by concurrent callers)."""
        if self.endpoint is not None and self.endpoint.reachable:
            return self.endpoint
        probed = self._probed
        if probed is None or probed.get_loop() is not asyncio.get_running_loop():
            probed = self._probed = asyncio.ensure_future(self.check_endpoint())
        info = await asyncio.shield(probed)
        self.use_endpoint(info)
        return info

    async def _open_endpoint(self, state: _LoopState) -> None:
        """Before the first request on this loop: the endpoint checked (waited for
        while it starts, endpoint_gate.py) and its slots applied to the limiter."""
        info = await self._known_endpoint()
        if not info.reachable:
            state.gate.connection_failed(info.error)
            await state.gate.wait()
        else:
            state.gate.reached_now()
        cap = self.concurrency_cap()
        if cap is not None:
            state.limiter.cap(cap)

    async def _ready(self, state: _LoopState) -> None:
        if state.ready is None:
            state.ready = asyncio.ensure_future(self._open_endpoint(state))
        try:
            await asyncio.shield(state.ready)
        except EndpointDown as exc:
            raise self._unreachable(exc) from None

    def _unreachable(self, exc: EndpointDown) -> EndpointUnreachable:
        """The first request to fail on a dead endpoint carries the whole reason; every
        later one a one-line reference to it (a run of 60 cases against a server that is
        not running is one error said once, not 60 identical blocks). The reason is also
        in the summary (``unreachable_reason``), so no case's message is the only copy."""
        stats = self.stats
        stats.errors += 1
        stats.unreachable += 1
        usage.record(errors=1)
        if not stats.unreachable_reason:
            # once per process: the wait's wording may differ between requests (a probe
            # that timed out under load, a refused connection), the outage is the same
            stats.unreachable_reason = exc.reason
            return EndpointUnreachable(exc.reason, cause=exc.reason)
        return EndpointUnreachable(
            f"LLM endpoint {self.base_url} unreachable: not sent (the reason is in this "
            "run's first unreachable error and in the summary)",
            cause=exc.reason,
        )

    def _transport(self, state: _LoopState) -> Transport:
        if state.transport is None:
            state.transport = make_transport(self.settings, self.stats, self.cache)
        return state.transport

    def transport_kind(self) -> str:
        """The transport a request would use now: lean, aiohttp, process, openai or bedrock."""
        return resolve_transport(self.settings)

    async def prepare(self) -> None:
        """Set up this loop's transport ahead of the first request (the process
        transport's helper starts while pytest is still collecting). Best effort: a
        failure here is met again, and reported, by the first request."""
        if self.offline or self.settings.dry_run:
            return
        with contextlib.suppress(Exception):
            transport = self._transport(self._state())
            start = getattr(transport, "start", None)
            if start is not None:
                await start()

    # -- the request ------------------------------------------------------------------------
    def build_request(
        self,
        messages: Messages,
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        response_format: Mapping[str, Any] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """The JSON body sent to ``/chat/completions`` (session defaults filled in)."""
        s = self.settings
        body: dict[str, Any] = {"model": model or s.model, "messages": normalize_messages(messages)}
        temperature = s.temperature if temperature is None else temperature
        if temperature is not None:
            body["temperature"] = temperature
        max_tokens = s.max_tokens if max_tokens is None else max_tokens
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        seed = s.seed if seed is None else seed
        if seed is not None:
            body["seed"] = seed
        if response_format is not None:
            body["response_format"] = dict(response_format)
        body.update(extra)
        return body

    def key_for(self, body: Mapping[str, Any], *, repeat: int = 0, attempt: int = 0) -> str:
        """Cache key: endpoint, body (model, messages, sampling, format, extras), repeat, attempt."""
        fields = {"base_url": self.settings.keyed_base_url, "body": body, "repeat": repeat, "attempt": attempt}
        fields.update(self.settings.key_fields(body))  # the provider's (none for OpenAI's)
        return cache_key(fields)

    async def chat(
        self,
        messages: Messages,
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        response_format: Mapping[str, Any] | None = None,
        repeat: int = 0,
        namespace: str = "default",
        attempt: int = 0,
        **extra: Any,
    ) -> ChatResponse:
        """Ask the model (or the cache). ``repeat``/``attempt`` make distinct keys, not sent.

        ``repeat`` numbers independent samples of the same request (``n_runs`` > 1 or a
        temperature above 0); ``attempt`` numbers a judge's re-asks after an unusable
        reply. ``namespace`` is the cache directory (one per task). Extra keyword
        arguments are sent in the body (``top_p``, ``stop``...) and are part of the key.
        """
        if (
            model is None
            and self.endpoint is None  # known after the first request: skip the URL parsing below
            and self.settings.serves_own_model
            and not self.offline
        ):
            # The request names the server's own model (and so does its cache key).
            await self._known_endpoint()
        body = self.build_request(
            messages,
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            response_format=response_format,
            **extra,
        )
        if self.offline:
            raise OfflineError(
                "no model endpoint is configured (offline): set --evals-base-url or "
                f"OPENAI_BASE_URL, or put an API key in ${self.settings.api_key_env}"
            )
        key = self.key_for(body, repeat=repeat, attempt=attempt)
        cache = self.cache
        if cache is not None:
            value = cache.get(namespace, key)
            if value is not None:
                return self._from_cache(value, key, namespace)
        # Whoever the run installed may stop us here (llm/io_hooks.py): batch mode records
        # the request instead, an inline attempt ends and the case goes to the engine.
        io_hooks.before_io(namespace, key, body)
        state = self._state()
        ident = (namespace, key)
        while (pending := state.inflight.get(ident)) is not None:
            try:
                response = await asyncio.shield(pending)
            except asyncio.CancelledError:
                if pending.cancelled():
                    continue  # its owner was cancelled, not us: ask ourselves
                raise
            self.stats.shared += 1
            return self._shared(response)
        if self.settings.dry_run:
            self._dry_run(state, ident, body)
        future: asyncio.Future[ChatResponse] = asyncio.get_running_loop().create_future()
        state.inflight[ident] = future
        try:
            response = await self._fetch(state, namespace, key, body)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: nobody else may be waiting
            raise
        else:
            future.set_result(response)
            return response
        finally:
            state.inflight.pop(ident, None)

    def _from_cache(self, value: Mapping[str, Any], key: str, namespace: str) -> ChatResponse:
        cost = cost_of(
            value["model"], value["prompt_tokens"], value["completion_tokens"], self.settings.prices
        )
        self.stats.cache_hits += 1
        self.stats.saved_usd += cost or 0.0
        io_hooks.counted(lambda: self._uncount_hit(cost))
        usage.record(cache_hits=1)
        return ChatResponse(
            # Answers stored before a secret was known to this layer are masked on the way out.
            text=redact.redact(value["text"]),
            model=redact.redact(value["model"]),
            prompt_tokens=value["prompt_tokens"],
            completion_tokens=value["completion_tokens"],
            cached=True,
            cost=cost,
            finish_reason=redact.redact_obj(value.get("finish_reason")),
            logprobs=value.get("logprobs"),
            key=key,
            namespace=namespace,
        )

    def _uncount_hit(self, cost: float | None) -> None:
        # An inline attempt that later needed the network is evaluated again on the
        # engine, where this hit is counted once more (io_hooks.counted).
        self.stats.cache_hits -= 1
        self.stats.saved_usd -= cost or 0.0

    def _shared(self, response: ChatResponse) -> ChatResponse:
        self.stats.cache_hits += 1
        self.stats.saved_usd += response.cost or 0.0
        usage.record(cache_hits=1)
        return ChatResponse(**{**response.__dict__, "cached": True})

    def _dry_run(self, state: _LoopState, ident: tuple[str, str], body: Mapping[str, Any]) -> None:
        prompt = estimate_prompt_tokens(body["messages"])
        completion = estimate_completion_tokens(body.get("max_tokens"))
        cost = cost_of(body["model"], prompt, completion, self.settings.prices)
        if ident not in state.dry_counted:
            state.dry_counted.add(ident)
            self.stats.dry_run_requests += 1
            self.stats.dry_run_prompt_tokens += prompt
            self.stats.dry_run_completion_tokens += completion
            self.stats.dry_run_cost_usd += cost or 0.0
        price = f"~${cost:.6f}" if cost is not None else "unknown price"
        raise DryRunSkip(
            f"dry run: uncached request to {body['model']} not sent "
            f"(~{prompt} prompt + ~{completion} completion tokens, {price})",
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost=cost,
        )

    async def _fetch(
        self, state: _LoopState, namespace: str, key: str, body: dict[str, Any]
    ) -> ChatResponse:
        cache = self.cache
        claimed = False
        ops: CacheOps | None = None
        if cache is not None:
            ops = self._cache_ops(state, cache, namespace)
            while not claimed:
                try:
                    status, value = await ops.lookup_or_claim(namespace, key)
                except AttemptError:
                    # The helper that applies the cache is unavailable: this process's
                    # own ResponseCache decides (the request then reports why).
                    ops = cache
                    continue
                if status == "hit":
                    return self._from_cache(value, key, namespace)
                if status == "claimed":
                    claimed = True
                    break
                value = await self._wait_for_other(cache, namespace, key)
                if value is not None:
                    self.stats.shared += 1
                    return self._from_cache(value, key, namespace)
        self.stats.cache_misses += 1
        try:
            completion = await self._request(state, body)
            completion = _masked(completion)
            cost = cost_of(
                completion.model,
                completion.prompt_tokens,
                completion.completion_tokens,
                self.settings.prices,
            )
            if ops is not None and cache is not None:
                answer = {
                    "text": completion.text,
                    "model": completion.model,
                    "prompt_tokens": completion.prompt_tokens,
                    "completion_tokens": completion.completion_tokens,
                    "finish_reason": completion.finish_reason,
                }
                if completion.logprobs is not None:
                    answer["logprobs"] = completion.logprobs
                try:
                    await ops.store(namespace, key, answer)
                except AttemptError:  # the helper died meanwhile: store it here
                    await cache.store(namespace, key, answer)
                claimed = False
        finally:
            if claimed and ops is not None:
                ops.release(namespace, key)
        self._count(completion, cost)
        return ChatResponse(
            text=completion.text,
            model=completion.model,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            cached=False,
            cost=cost,
            finish_reason=completion.finish_reason,
            logprobs=completion.logprobs,
            key=key,
            namespace=namespace,
        )

    def _cache_ops(self, state: _LoopState, cache: ResponseCache, namespace: str) -> CacheOps:
        """Who applies claims and stores: the transport's own cache operations (the
        process transport's helper, off this process's GIL) when it has them, else this
        process's ResponseCache. Both work on the same directory; reads (hits, waiting
        for another's answer) are always local."""
        ops = self._transport(state).cache_ops
        if ops is not None and cache.writable(namespace):
            return ops
        return cache

    async def _wait_for_other(
        self, cache: ResponseCache, namespace: str, key: str
    ) -> dict[str, Any] | None:
        """Another process claimed this request: poll for its answer until the claim goes."""
        delay = 0.02
        while True:
            await asyncio.sleep(delay)
            delay = min(0.25, delay * 1.5)
            value = cache.get(namespace, key)
            if value is not None:
                return value
            claim = cache.peek_claim(namespace, key)
            if claim is None or claim.stale():
                return None  # it failed or died: try to claim it ourselves

    def _count(self, completion: Completion, cost: float | None) -> None:
        stats = self.stats
        stats.requests += 1
        stats.prompt_tokens += completion.prompt_tokens
        stats.completion_tokens += completion.completion_tokens
        if cost is None:
            stats.unpriced_requests += 1
        else:
            stats.cost_usd += cost
        usage.record(
            requests=1,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            cost=cost or 0.0,
            unpriced_requests=0 if cost is not None else 1,
        )

    async def _request(self, state: _LoopState, body: dict[str, Any]) -> Completion:
        transport = self._transport(state)
        start = getattr(transport, "start", None)
        if start is not None:
            # The process transport's helper starting (normally done during collection)
            # is not the request's time: outside the deadline. If it cannot start, the
            # attempt below fails with the reason.
            with contextlib.suppress(Exception):
                await start()
        # Outside every deadline: the endpoint checked once (and waited for while it
        # starts or loads its model), its slots applied to the limiter.
        await self._ready(state)
        return await self._attempts(state, body)

    async def _attempts(self, state: _LoopState, body: dict[str, Any]) -> Completion:
        s, stats, limiter, gate = self.settings, self.stats, state.limiter, state.gate
        transport = self._transport(state)
        attempts = s.max_retries + 1
        attempt = free = 0
        while True:
            attempt += 1
            try:
                await gate.wait()
            except EndpointDown as exc:
                raise self._unreachable(exc) from None
            # The deadline starts here, on the wire: time waiting for a slot of the
            # limiter (or for the gate) is not the server's.
            await limiter.acquire()
            stats.peak_in_flight = max(stats.peak_in_flight, limiter.in_flight)
            outage = gate.generation
            deadline = s.timeout
            try:
                stats.attempts += 1
                sent = time.monotonic()
                overloaded = connection = False
                try:
                    async with _attempt_deadline(deadline):
                        completion = await transport.send(body)
                except TimeoutError:
                    overloaded = True
                    error = AttemptError(
                        f"no complete reply within {deadline:g}s (the server may be queueing: "
                        "lower --evals-concurrency or raise --evals-timeout)",
                        retryable=True,
                    )
                except AttemptError as exc:
                    # Rebuilt with the key scrubbed: this frame's locals may be shown
                    # (pytest --showlocals) and servers quote keys in their errors.
                    error = AttemptError(
                        self.redact(exc.cause),
                        retryable=exc.retryable,
                        status=exc.status,
                        retry_after=exc.retry_after,
                    )
                    connection = exc.connection
                except Exception as exc:  # anything else the HTTP stack raises mid-request
                    # A refused or dropped connection: a server restarting or overwhelmed.
                    connection = True
                    error = AttemptError(
                        self.redact(f"{type(exc).__name__}: {exc}"), retryable=True
                    )
                else:
                    gate.reached_now()
                    # The first reply's time may include a server loading its model
                    # (warming up), which says nothing about load.
                    first = not state.warmed.is_set()
                    state.warmed.set()
                    limiter.on_success(None if first else time.monotonic() - sent)
                    self._note_lowest(limiter)
                    return completion
            finally:
                limiter.release()
            cause = error.cause
            if connection:
                # Hold every request until the endpoint answers again (endpoint_gate.py).
                gate.connection_failed(cause)
            if connection or gate.closed or gate.generation != outage:
                # Whatever failed this attempt (refused, cut, timed out, an error page),
                # the endpoint was down while it was on the wire: wait for it to come back.
                try:
                    await gate.wait()
                except EndpointDown as exc:
                    raise self._unreachable(exc) from None
                if gate.generation != outage and free < FREE_RESENDS:
                    # Not the request's fault, nor a sign of load: sent again, not
                    # counted as a retry.
                    free += 1
                    attempt -= 1
                    stats.outage_resends += 1
                    continue
                if connection:
                    overloaded = True  # it answers checks but drops requests: overloaded
            if error.throttled:
                stats.throttled += 1
                limiter.on_throttle()
            elif overloaded:
                limiter.on_overload()
            self._note_lowest(limiter)
            # A refused response_format goes back to the caller at once, to step down
            # a rung (structured_output.py); sent again as it was, it would be refused
            # again, after the backoff.
            refused = body.get("response_format") is not None and refuses_format(error.status, cause)
            if not error.retryable or refused or attempt >= attempts:
                stats.errors += 1
                usage.record(errors=1)
                overflow = context_overflow(error)
                if overflow is not None:
                    tokens = estimate_prompt_tokens(body.get("messages") or [])
                    asked = f" + max_tokens {body['max_tokens']}" if body.get("max_tokens") else ""
                    known = overflow or (self.endpoint.context if self.endpoint else None) or 0
                    limit = f", limit {known} tokens" if known else ""
                    raise ContextLengthError(
                        f"LLM request to {self.base_url} (model {body['model']}) is longer than "
                        f"the model's context: about {tokens} prompt tokens{asked}{limit} ({cause})",
                        prompt_tokens=tokens,
                        limit=known or None,
                        cause=cause,
                    ) from None
                tries = f"{attempt} attempt{'s' if attempt > 1 else ''}"
                raise LLMError(
                    f"LLM request to {self.base_url} (model {body['model']}) failed after {tries}: {cause}",
                    cause=cause,
                    status=error.status,
                ) from None
            stats.retries += 1
            delay = self.backoff.delay(attempt, error)
            log.info("pytest_evals: %s; retry %d/%d in %.2fs", cause, attempt, s.max_retries, delay)
            await asyncio.sleep(delay)

    def _note_lowest(self, limiter: AdaptiveLimiter) -> None:
        """The lowest concurrency used: the configured one (or the server's slots)
        when nothing was throttled, never 0 once a request went out."""
        mine = self.stats.lowest_concurrency
        self.stats.lowest_concurrency = min(mine, limiter.lowest) if mine else limiter.lowest

    # -- synchronous use and shutdown ------------------------------------------------------
    @property
    def engine(self) -> Engine:
        """The loop sync callers borrow: the session's engine, or a private one."""
        if self._engine is not None:
            return self._engine
        with self._lock:
            if self._own_engine is None:
                from pytest_evals.llm.event_loop import Engine

                self._own_engine = Engine()
            return self._own_engine

    def chat_sync(self, messages: Messages, **kwargs: Any) -> ChatResponse:
        """:meth:`chat` for synchronous code (runs on the engine loop and waits)."""
        return self.engine.run(self.chat(messages, **kwargs))

    def complete(self, prompt: str, **kwargs: Any) -> str:
        """One user prompt in, the reply text out (synchronous)."""
        return self.chat_sync(prompt, **kwargs).text

    async def aclose(self) -> None:
        """Close this loop's HTTP pool (call on each loop you used, e.g. after asyncio.run)."""
        loop = asyncio.get_running_loop()
        state = self._states.pop(loop, None)
        if state is not None:
            await state.gate.aclose()
        if state is not None and state.transport is not None:
            await state.transport.aclose()

    def close(self) -> None:
        """Close every pool (from outside the loops) and the cache; idempotent."""
        for loop in list(self._states):
            if loop.is_closed():
                self._states.pop(loop, None)
                continue
            if loop.is_running():
                with contextlib.suppress(Exception):
                    asyncio.run_coroutine_threadsafe(self._aclose_on(loop), loop).result(10)
            else:
                with contextlib.suppress(Exception):
                    loop.run_until_complete(self._aclose_on(loop))
            self._states.pop(loop, None)
        if self._own_engine is not None:
            self._own_engine.close()
            self._own_engine = None
        if self.cache is not None:
            self.cache.close()

    async def _aclose_on(self, loop: asyncio.AbstractEventLoop) -> None:
        state = self._states.get(loop)
        if state is not None:
            await state.gate.aclose()
        if state is not None and state.transport is not None:
            await state.transport.aclose()
            state.transport = None
