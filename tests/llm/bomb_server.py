"""A loopback endpoint that answers with a compression bomb: ~1 MB on the wire, 1 GiB decoded.

``POST /v1/chat/completions``: a prompt holding ``BOMB`` gets a 200 whose body is
``Content-Encoding: gzip`` (or ``deflate`` for ``BOMB-DEFLATE``) of 1 GiB of spaces, which
is valid JSON whitespace until its end; any other prompt is answered normally (echoed).
Run as a script it serves until killed and prints ``URL <base url>`` first.
"""

from __future__ import annotations

import asyncio
import json
import struct
import sys
import threading
import zlib
from functools import lru_cache
from typing import Any

from aiohttp import web

DECODED = 2**30
_BLOCK = b" " * 2**20


@lru_cache(maxsize=2)
def bomb(encoding: str) -> bytes:
    """``DECODED`` bytes of spaces, compressed. Built from one deflate block repeated:
    after a full flush the compressor starts afresh, so every megabyte compresses to
    the same bytes (about 0.8 s instead of a minute of compressing)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = compressor.compress(_BLOCK) + compressor.flush(zlib.Z_FULL_FLUSH)
    body = block * (DECODED // len(_BLOCK)) + compressor.flush(zlib.Z_FINISH)
    if encoding == "gzip":
        crc = 0
        for _ in range(DECODED // len(_BLOCK)):
            crc = zlib.crc32(_BLOCK, crc)
        header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
        return header + body + struct.pack("<II", crc, DECODED & 0xFFFFFFFF)
    adler = 1
    for _ in range(DECODED // len(_BLOCK)):
        adler = zlib.adler32(_BLOCK, adler)
    return b"\x78\xda" + body + struct.pack(">I", adler)


def _reply(prompt: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bomb",
        "object": "chat.completion",
        "model": "bomb-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": prompt}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


async def chat(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    prompt = str(body["messages"][-1]["content"])
    if "BOMB" not in prompt:
        return web.json_response(_reply(prompt))
    encoding = "deflate" if "BOMB-DEFLATE" in prompt else "gzip"
    data = bomb(encoding)
    response = web.StreamResponse(
        status=200,
        headers={"Content-Type": "application/json", "Content-Encoding": encoding},
    )
    response.content_length = len(data)
    await response.prepare(request)
    try:
        for start in range(0, len(data), 65536):
            await response.write(data[start : start + 65536])
    except (ConnectionError, asyncio.CancelledError):
        pass
    return response


class BombServer:
    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> BombServer:
        bomb("gzip"), bomb("deflate")  # built before the first request's deadline starts
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)

        async def start() -> None:
            self._runner = web.AppRunner(app)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            assert site._server is not None
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

        self._thread.start()
        asyncio.run_coroutine_threadsafe(start(), self._loop).result(30)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


if __name__ == "__main__":  # pragma: no cover - a manual check
    with BombServer() as server:
        print(json.dumps({"url": server.base_url}), flush=True)
        sys.stdin.read()
