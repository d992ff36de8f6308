"""A loopback server that behaves the way hostile or careless endpoints do.

What it does depends on a marker in the last user message of a chat request:

- ``QUOTE-AUTH``: 401 whose error message quotes the Authorization header it received;
- ``ECHO-SECRET``: 200 whose reply repeats :data:`ECHOED` (a value the client knows as a
  secret) and the Authorization header;
- ``ENDLESS``: 200 with a body that never ends;
- ``BAD-RETRY``: 429 with a Retry-After that is no number and no date, then 200;
- anything else: 200 echoing the message.

``POST /rate`` is a reward-model endpoint that always answers 401 quoting the
Authorization header.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from typing import Any

from aiohttp import web

#: Placed in replies by ECHO-SECRET; tests register it as the API key.
ECHOED = "sk-hardening-echoed-KEY-5d41402abc4b2a76"


def _completion(reply: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-hostile",
        "object": "chat.completion",
        "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6},
    }


def _last_user(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content"))
    return ""


class HostileServer:
    def __init__(self) -> None:
        self.seen = Counter[str]()
        self.auth_headers: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def rate_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/rate"

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        prompt = _last_user(body)
        auth = request.headers.get("Authorization", "")
        self.auth_headers.append(auth)
        for marker in ("QUOTE-AUTH", "ECHO-SECRET", "ENDLESS", "BAD-RETRY"):
            if marker in prompt:
                self.seen[marker] += 1
                break
        else:
            marker = ""
        if marker == "QUOTE-AUTH":
            message = f"Unauthorized: the header 'Authorization: {auth}' is not accepted"
            return web.json_response({"error": {"message": message, "type": "auth"}}, status=401)
        if marker == "ECHO-SECRET":
            return web.json_response(_completion(f"your key is {ECHOED} and you sent {auth}"))
        if marker == "ENDLESS":
            response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            await response.prepare(request)
            chunk = b" " * 65536
            try:
                while True:
                    await response.write(chunk)
            except (ConnectionError, asyncio.CancelledError):
                pass
            return response
        if marker == "BAD-RETRY" and self.seen[marker] % 2 == 1:
            return web.json_response(
                {"error": {"message": "slow down", "type": "rate"}},
                status=429,
                headers={"Retry-After": "whenever you like"},
            )
        return web.json_response(_completion(prompt))

    async def rate(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        return web.Response(status=401, text=f"invalid token in Authorization: {auth}")

    def start(self) -> HostileServer:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/rate", self.rate)

        async def _start() -> None:
            self._runner = web.AppRunner(app)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            server = site._server
            assert server is not None
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

        self._thread.start()
        asyncio.run_coroutine_threadsafe(_start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def summary_is_strict_json(text: str) -> Any:
    """Parse JSON refusing NaN/Infinity (what other tools' strict parsers do)."""

    def refuse(name: str) -> Any:
        raise ValueError(f"non-JSON constant {name}")

    return json.loads(text, parse_constant=refuse)
