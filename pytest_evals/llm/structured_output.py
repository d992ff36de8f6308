"""Asking a judge for JSON the endpoint enforces, where the endpoint can.

Servers differ in what ``response_format`` they take: OpenAI, vLLM, llama.cpp's C++
server and recent Ollama take ``{"type": "json_schema", ...}``; llama-cpp-python's server
takes only ``{"type": "json_object"}`` with an optional ``"schema"`` (and turns it into a
grammar, so a small model cannot stray from it); some take none. The judge tries the
strongest form first and steps down the ladder when the endpoint refuses one (an HTTP
400/422 that names the format); the step is remembered per endpoint and model for the
rest of the run and written beside the response cache, so the next run (and every xdist
worker) starts where the last one ended instead of paying for the refusal again.

Per model, not per endpoint: one gateway (LiteLLM, OpenRouter, a llama.cpp router, or
the variants of one suite sending several models to one URL) may front models that take
different formats; a refusal by one must not send the others down the ladder.

The last rung is plain text: the reply is then parsed as it always was.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_evals.llm.call_errors import ContextLengthError, LLMError, refuses_format

if TYPE_CHECKING:
    from pytest_evals.llm.client import ChatResponse, LLMClient, Messages

Level = Literal["json_schema", "json_object_schema", "json_object", "text"]
#: Strongest first. ``json_object`` (no schema) is only for prompts that ask for JSON
#: themselves (OpenAI refuses it otherwise); a two-option verdict skips it.
LADDER: tuple[Level, ...] = ("json_schema", "json_object_schema", "json_object", "text")

_FILE = "structured_output.json"


def response_format(level: Level, schema: Mapping[str, Any] | None, name: str) -> dict[str, Any] | None:
    """The ``response_format`` body field for ``level`` (None: send none)."""
    if level == "json_schema" and schema is not None:
        return {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema)}}
    if level == "json_object_schema" and schema is not None:
        return {"type": "json_object", "schema": dict(schema)}
    if level == "json_object":
        return {"type": "json_object"}
    return None


def is_refusal(exc: BaseException) -> bool:
    """Did the endpoint refuse the ``response_format`` (rather than fail otherwise)?"""
    if not isinstance(exc, LLMError) or isinstance(exc, ContextLengthError):
        return False
    return refuses_format(exc.status, str(exc.cause or exc))


class EndpointFormats:
    """The rung each (endpoint, model) is on (the process's memory plus a file)."""

    def __init__(self) -> None:
        self._levels: dict[str, Level] = {}
        #: (endpoint, model) keys whose rung has answered (or was read from the file):
        #: no probing.
        self._confirmed: set[str] = set()
        self._probes: dict[tuple[int, str], asyncio.Lock] = {}
        self._lock = threading.Lock()

    def confirmed(self, llm: LLMClient, model: str | None = None) -> bool:
        self.level(llm, model)
        with self._lock:
            return self._key(llm, model) in self._confirmed

    def confirm(self, llm: LLMClient, level: Level, model: str | None = None) -> None:
        key = self._key(llm, model)
        with self._lock:
            if key in self._confirmed or self._levels.get(key) != level:
                return
            self._confirmed.add(key)
            self._write(llm, key, level)

    def probe_lock(self, llm: LLMClient, model: str | None = None) -> asyncio.Lock:
        """One request at a time finds a model's rung (per event loop): a burst of 64
        first requests must not each be refused and retried."""
        ident = (id(asyncio.get_running_loop()), self._key(llm, model))
        with self._lock:
            lock = self._probes.get(ident)
            if lock is None:
                lock = self._probes[ident] = asyncio.Lock()
            return lock

    @staticmethod
    def _path(llm: LLMClient) -> Path | None:
        if llm.cache is None:
            return None
        return Path(llm.settings.cache_dir) / _FILE

    @staticmethod
    def _key(llm: LLMClient, model: str | None = None) -> str:
        """The endpoint and the model the request names (the client's own by default).
        Hashed: the file must not hold an endpoint's credentials or query string."""
        name = model or llm.model
        return hashlib.sha256(f"{llm.settings.keyed_base_url}\0{name}".encode()).hexdigest()[:32]

    def level(self, llm: LLMClient, model: str | None = None) -> Level:
        key = self._key(llm, model)
        with self._lock:
            found = self._levels.get(key)
            if found is None:
                stored = self._read(llm).get(key)
                found = stored if stored in LADDER else LADDER[0]
                if stored in LADDER:
                    self._confirmed.add(key)
                self._levels[key] = found
            return found

    def refused(self, llm: LLMClient, level: Level, model: str | None = None) -> Level:
        """Step below ``level`` (if the model is still on it); the new rung."""
        key = self._key(llm, model)
        with self._lock:
            current = self._levels.get(key, LADDER[0])
            if LADDER.index(current) <= LADDER.index(level):
                current = LADDER[min(LADDER.index(level) + 1, len(LADDER) - 1)]
                self._levels[key] = current
                self._write(llm, key, current)
            return current

    def forget(self) -> None:
        with self._lock:
            self._levels.clear()
            self._confirmed.clear()

    def _read(self, llm: LLMClient) -> dict[str, Level]:
        path = self._path(llm)
        if path is None:
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, llm: LLMClient, key: str, level: Level) -> None:
        path = self._path(llm)
        if path is None:
            return
        try:
            data = {**self._read(llm), key: level}
            path.parent.mkdir(parents=True, exist_ok=True)
            # Per process and thread: xdist workers write the same file.
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
            tmp.replace(path)
        except OSError:
            pass  # the memory still holds it; the next run asks once more


#: The run's memory (one per process; xdist workers share the file).
FORMATS = EndpointFormats()


def enabled(llm: LLMClient) -> bool:
    return getattr(llm.settings, "structured_output", "auto") != "off"


async def chat_structured(
    llm: LLMClient,
    messages: Messages,
    *,
    schema: Mapping[str, Any] | None,
    name: str,
    prompt_asks_json: bool,
    **kwargs: Any,
) -> tuple[ChatResponse, Level]:
    """``llm.chat`` with the strongest ``response_format`` this endpoint takes.

    ``prompt_asks_json``: the prompt itself asks for a JSON object, so the schema-less
    ``json_object`` rung may be used. A refusal moves the endpoint down one rung and the
    request is sent again at once (it is not a re-ask: the model never saw it).
    """
    if not enabled(llm) or (schema is None and not prompt_asks_json):
        return await _send(llm, messages, "text", schema, name, prompt_asks_json, None, **kwargs)
    model = await _model_of(llm, kwargs.get("model"))
    if not FORMATS.confirmed(llm, model):
        async with FORMATS.probe_lock(llm, model):
            if not FORMATS.confirmed(llm, model):
                level = FORMATS.level(llm, model)
                return await _send(llm, messages, level, schema, name, prompt_asks_json, model, **kwargs)
    level = FORMATS.level(llm, model)
    return await _send(llm, messages, level, schema, name, prompt_asks_json, model, **kwargs)


async def _model_of(llm: LLMClient, asked: str | None) -> str:
    """The model the request will name: the one asked for, else the client's, which for
    a local server without ``--evals-model`` is the server's own (learnt from its
    ``/models`` before the first request, as ``llm.chat`` itself does)."""
    if asked:
        return asked
    if llm.settings.serves_own_model and llm.endpoint is None and not llm.offline:
        await llm._known_endpoint()
    return llm.model


async def _send(
    llm: LLMClient,
    messages: Messages,
    endpoint: Level,
    schema: Mapping[str, Any] | None,
    name: str,
    prompt_asks_json: bool,
    key_model: str | None,
    **kwargs: Any,
) -> tuple[ChatResponse, Level]:
    """``key_model``: the model whose rung this is (the request's own ``model`` stays in
    ``kwargs``, sent as given)."""
    while True:
        level = endpoint
        if level in ("json_schema", "json_object_schema") and schema is None:
            level = "json_object"
        if level == "json_object" and not prompt_asks_json:
            level = "text"
        fmt = response_format(level, schema, name)
        try:
            response = await llm.chat(messages, response_format=fmt, **kwargs)
        except LLMError as exc:
            if fmt is None or not is_refusal(exc):
                raise
            if level != endpoint:
                # A rung this request chose for itself (no schema to send): the
                # endpoint's own rung stays; this request goes as plain text.
                endpoint = "text"
                continue
            endpoint = FORMATS.refused(llm, level, key_model)
            continue
        if level == endpoint and fmt is not None:
            FORMATS.confirm(llm, level, key_model)
        return response, level
