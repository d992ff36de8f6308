"""The wire format between this process and the process transport's helper.

Frames over the helper's stdin and stdout: a ``!IIB`` header (payload length, request
id, kind) then a JSON payload. Id 0 marks frames nobody waits a reply for (SETUP,
READY, cache releases). The kinds are the transport's (SETUP, READY, REQUEST, CANCEL,
REPLY, FAILURE: see process_transport.py) and the response cache's (CACHE: see
helper_cache.py), which share the pipe.
"""

from __future__ import annotations

import struct
from typing import Any

HEADER = struct.Struct("!IIB")
SETUP, READY, REQUEST, CANCEL, REPLY, FAILURE, CACHE = range(7)


def dumps(value: Any) -> bytes:
    import orjson

    try:
        return orjson.dumps(value)
    except TypeError:  # what orjson refuses (int keys too big, subclasses...), json may take
        import json

        return json.dumps(value).encode()


def loads(data: bytes) -> Any:
    import orjson

    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:  # a lone surrogate escape ("\\ud800"), which json takes
        import json

        return json.loads(data)


def frame(kind: int, ident: int, payload: Any) -> bytes:
    data = dumps(payload)
    return HEADER.pack(len(data), ident, kind) + data


class Frames:
    """Splits a byte stream into (kind, id, payload bytes) frames."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, int, bytes]]:
        buf = self._buf
        buf += data
        out: list[tuple[int, int, bytes]] = []
        pos = 0
        while len(buf) - pos >= HEADER.size:
            size, ident, kind = HEADER.unpack_from(buf, pos)
            end = pos + HEADER.size + size
            if len(buf) < end:
                break
            out.append((kind, ident, bytes(buf[pos + HEADER.size : end])))
            pos = end
        del buf[:pos]
        return out
