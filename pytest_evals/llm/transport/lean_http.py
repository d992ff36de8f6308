"""HTTP/1.1 on asyncio's own sockets, for plain ``http://`` endpoints (``--evals-transport lean``).

A local or loopback server (vLLM, llama.cpp, Ollama, a company's gateway on the private
network) is where the client's own CPU shows: the request takes milliseconds and every
case also pays pytest's per-item cost on the same core. aiohttp is general (cookies,
redirects, proxies, multipart, tracing, two TLS contexts built at import) and costs
about 0.15 s to import and ~0.2 ms of CPU per request here; this path keeps only what
one JSON POST needs: a pool of keep-alive connections, a request head built once, and a
response parser for ``Content-Length``, ``chunked`` and read-until-close bodies
(gzip/deflate decoded, under the same size cap as the other transports).

Like the other transports it makes exactly one attempt and turns every failure into an
:class:`~pytest_evals.llm.retry.AttemptError`. One exception: a kept-alive connection the
server closed while it was idle (its keep-alive timeout) fails before any byte of a reply
comes back; the request is then sent once more on a new connection at once, as aiohttp
does, rather than counted as a failed attempt and backed off.

``https://`` endpoints and anything this parser refuses to guess about stay with aiohttp
(``auto`` picks this path for ``http://`` only, see ``client.resolve_transport``).
"""

from __future__ import annotations

import asyncio
import json
import socket
import zlib
from typing import Any
from urllib.parse import quote, urlsplit

from pytest_evals.llm.retry import AttemptError
from pytest_evals.llm.settings import LLMSettings
from pytest_evals.llm.transport.http_transport import (
    BodyTooLarge,
    Completion,
    completion_from_reply,
    malformed,
)

#: A response head larger than this is not an OpenAI-compatible server's.
MAX_HEAD_BYTES = 64 * 1024
#: Idle connections kept per pool beyond which a finished one is closed.
MAX_IDLE = 256
#: Characters a request target may carry as they are (RFC 3986 path and query characters);
#: anything else (a space, non-ASCII) is percent-encoded, as aiohttp's URL handling does.
_TARGET_SAFE = "/:@!$&'()*+,;=-._~%?"


class ProtocolError(Exception):
    """The server's reply is not HTTP/1.1 this client reads; the connection is dropped."""


class _Stale(Exception):
    """A reused connection was closed by the server before any byte of the reply."""


class Reply:
    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        #: Header names lower-cased; a repeated header's values joined by ", ".
        self.headers = headers
        self.body = body


class _Connection(asyncio.Protocol):
    """One keep-alive connection: one request at a time, the reply parsed as it arrives."""

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reusable = True
        self.used = False
        self._buf = bytearray()
        self._waiter: asyncio.Future[Reply] | None = None
        self._got_bytes = False
        self._scan = 0
        self._status = 0
        self._headers: dict[str, str] = {}
        #: "head", "length", "chunked", "close" (read until EOF) or "done".
        self._state = "head"
        self._need = 0
        self._parts: list[bytes] = []
        self._size = 0
        self._chunk_left = -1
        self._trailers = False

    # -- asyncio.Protocol -------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():
            # Bytes nobody asked for (a server writing after its reply): this
            # connection's framing can no longer be trusted.
            self.reusable = False
            self.close()
            return
        self._got_bytes = True
        self._buf += data
        try:
            self._parse()
        except (BodyTooLarge, ProtocolError) as exc:
            self._fail(exc)
        except Exception as exc:  # whatever a hostile reply provokes: its request fails
            self._fail(ProtocolError(f"unreadable reply ({type(exc).__name__}: {exc})"))

    def eof_received(self) -> bool | None:
        self.reusable = False
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            if self._state == "close":
                self._finish()
            elif not self._got_bytes:
                waiter.set_exception(_Stale() if self.used else ConnectionResetError("the server closed the connection before replying"))
            else:
                waiter.set_exception(ConnectionResetError("the server closed the connection in the middle of its reply"))
        return None  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            if self._state == "close" and exc is None:
                self._finish()
            elif not self._got_bytes and self.used:
                waiter.set_exception(_Stale())
            else:
                waiter.set_exception(exc or ConnectionResetError("the connection was closed before the reply was complete"))

    # -- one exchange -----------------------------------------------------------------
    async def exchange(self, data: bytes) -> Reply:
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        self._got_bytes = False
        self._state, self._scan, self._parts, self._size = "head", 0, [], 0
        self.transport.write(data)
        try:
            return await waiter
        except BaseException:
            # Cancelled (the attempt's deadline) or failed: whatever of the reply is still
            # on its way would be read as the next request's.
            self.reusable = False
            self.close()
            raise
        finally:
            self.used = True
            self._waiter = None

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.abort()

    def _fail(self, exc: Exception) -> None:
        self.reusable = False
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self.close()

    def _finish(self) -> None:
        body = b"".join(self._parts)
        self._parts = []
        self._state = "done"
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(Reply(self._status, self._headers, body))

    def _take(self, data: bytes | bytearray) -> None:
        self._size += len(data)
        if self._size > self.max_body:
            raise BodyTooLarge(self.max_body)
        self._parts.append(bytes(data))

    # -- parsing ----------------------------------------------------------------------
    def _parse(self) -> None:
        buf = self._buf
        while True:
            state = self._state
            if state == "head":
                end = buf.find(b"\r\n\r\n", self._scan)
                if end < 0:
                    if len(buf) > MAX_HEAD_BYTES:
                        raise ProtocolError(f"response head longer than {MAX_HEAD_BYTES} bytes")
                    self._scan = max(0, len(buf) - 3)
                    return
                head = bytes(buf[:end])
                del buf[: end + 4]
                self._scan = 0
                self._read_head(head)
            elif state == "length":
                if len(buf) < self._need:
                    return
                self._take(buf[: self._need])
                if len(buf) > self._need:
                    self.reusable = False  # more than announced: framing lost
                buf.clear()
                self._finish()
                return
            elif state == "chunked":
                if not self._read_chunks():
                    return
                self._finish()
                return
            elif state == "close":
                if buf:
                    self._take(buf)
                    buf.clear()
                return
            else:  # "done": extra bytes after the reply
                if buf:
                    self.reusable = False
                    buf.clear()
                return

    def _read_head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        status_line = lines[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        code = parts[1] if len(parts) > 1 else ""
        if not parts[0].startswith("HTTP/1.") or len(code) != 3 or not (code.isascii() and code.isdigit()):
            raise ProtocolError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
        status = int(parts[1])
        headers: dict[str, str] = {}
        for raw in lines[1:]:
            name, sep, value = raw.decode("latin-1").partition(":")
            if not sep or not name or name != name.strip():
                raise ProtocolError(f"malformed header line: {raw[:80]!r}")
            key = name.lower()
            value = value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        if 100 <= status < 200:
            return  # an interim reply (100 Continue, 103 Early Hints): the real one follows
        self._status, self._headers = status, headers
        connection = headers.get("connection", "").lower()
        if "close" in connection or (parts[0] == "HTTP/1.0" and "keep-alive" not in connection):
            self.reusable = False
        if status in (204, 304):
            self._state, self._need = "length", 0
            return
        coding = headers.get("transfer-encoding")
        if coding is not None:
            if coding.lower().rsplit(",", 1)[-1].strip() != "chunked":
                raise ProtocolError(f"Transfer-Encoding {coding!r} is not chunked")
            self._state, self._chunk_left, self._trailers = "chunked", -1, False
            return
        length = headers.get("content-length")
        if length is None:
            self._state = "close"
            self.reusable = False
            return
        values = {v.strip() for v in length.split(",")}
        if len(values) != 1 or not (next(iter(values)).isascii() and next(iter(values)).isdigit()):
            raise ProtocolError(f"Content-Length {length[:40]!r} is not one number")
        need = int(next(iter(values)))
        if need > self.max_body:
            raise BodyTooLarge(self.max_body)
        self._state, self._need = "length", need

    def _read_chunks(self) -> bool:
        """Consume chunks from the buffer; True when the last chunk and trailers are in."""
        buf = self._buf
        while True:
            if self._trailers:
                end = buf.find(b"\r\n")
                if end < 0:
                    if len(buf) > MAX_HEAD_BYTES:
                        raise ProtocolError("chunked trailers too long")
                    return False
                del buf[: end + 2]
                if end == 0:
                    if buf:
                        self.reusable = False
                        buf.clear()
                    return True
                continue
            if self._chunk_left < 0:
                end = buf.find(b"\r\n")
                if end < 0:
                    if len(buf) > 1024:
                        raise ProtocolError("chunk size line too long")
                    return False
                size_text = bytes(buf[:end]).split(b";", 1)[0].strip()
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise ProtocolError(f"bad chunk size {size_text[:20]!r}") from None
                if size < 0:
                    raise ProtocolError("negative chunk size")
                del buf[: end + 2]
                if size == 0:
                    self._trailers = True
                    continue
                if self._size + size > self.max_body:
                    raise BodyTooLarge(self.max_body)
                self._chunk_left = size
            if len(buf) < self._chunk_left + 2:
                return False
            if buf[self._chunk_left : self._chunk_left + 2] != b"\r\n":
                raise ProtocolError("chunk not followed by CRLF")
            self._take(buf[: self._chunk_left])
            del buf[: self._chunk_left + 2]
            self._chunk_left = -1


def _decoded(reply: Reply, limit: int) -> bytes:
    """The body with its Content-Encoding undone, never past ``limit`` decoded bytes."""
    coding = reply.headers.get("content-encoding", "identity").strip().lower()
    if coding in ("identity", ""):
        return reply.body
    if coding in ("gzip", "x-gzip", "deflate"):
        # gzip: its header; deflate: zlib-wrapped as the standard says, raw as some send.
        attempts = (16 + zlib.MAX_WBITS,) if coding != "deflate" else (zlib.MAX_WBITS, -zlib.MAX_WBITS)
        for wbits in attempts:
            try:
                inflater = zlib.decompressobj(wbits)
                out = inflater.decompress(reply.body, limit + 1)
            except zlib.error:
                continue
            if len(out) > limit or inflater.unconsumed_tail:
                raise BodyTooLarge(limit)
            return out
        raise ProtocolError(f"the {coding} body does not decode")
    raise ProtocolError(f"Content-Encoding {coding!r} is not supported by the lean transport")


class LeanHttpTransport:
    cache_ops = None  # the client's ResponseCache applies claims and stores

    def __init__(self, settings: LLMSettings) -> None:
        from pytest_evals.llm.endpoint_probe import endpoint_url

        url = urlsplit(endpoint_url(settings.base_url, "/chat/completions"))
        if url.scheme != "http" or not url.hostname:
            raise ValueError(f"the lean transport speaks plain http:// only, not {url.scheme}://")
        self._host = url.hostname
        self._port = url.port or 80
        self._max_body = settings.max_body_bytes
        host = f"[{self._host}]" if ":" in self._host else self._host
        if self._port != 80:
            host = f"{host}:{self._port}"
        target = quote(url.path or "/", safe=_TARGET_SAFE) + (f"?{quote(url.query, safe=_TARGET_SAFE)}" if url.query else "")
        lines = [
            f"POST {target} HTTP/1.1",
            f"Host: {host}",
            "Content-Type: application/json",
            "Accept: application/json",
            "User-Agent: pytest-evals",
        ]
        #: Why no request can be sent (a header value that would split the request).
        self._refusal: str | None = None
        authorization = settings.authorization
        if authorization:
            if any(c in authorization for c in "\r\n\0") or not authorization.isascii():
                self._refusal = (
                    "the API key (or the URL's user:password) holds a line break, NUL or a "
                    "non-ASCII character, which no HTTP header may carry"
                )
            else:
                lines.append(f"Authorization: {authorization}")
        self._head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("ascii")
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()
        #: The host name's address, resolved once (each new connection would otherwise
        #: ask the resolver on a thread); forgotten when a connection to it fails.
        self._address: tuple[str, int] | None = None

    async def send(self, body: dict[str, Any]) -> Completion:
        return await self.post(json.dumps(body).encode(), str(body.get("model")))

    async def post(self, payload: bytes, model: str) -> Completion:
        """Send an encoded request body; ``model`` is the one it asked for."""
        if self._refusal is not None:
            raise AttemptError(self._refusal, retryable=False)
        data = b"%s%d\r\n\r\n%s" % (self._head, len(payload), payload)
        try:
            reply = await self._exchange(data)
            raw = _decoded(reply, self._max_body)
        except BodyTooLarge as exc:
            raise exc.attempt_error() from None
        except ProtocolError as exc:
            raise malformed(str(exc)) from None
        except OSError as exc:
            raise AttemptError(f"connection error: {type(exc).__name__}: {exc}", retryable=True) from None
        return completion_from_reply(reply.status, raw, reply.headers, model)

    async def _exchange(self, data: bytes) -> Reply:
        while self._idle:
            conn = self._idle.pop()
            if conn.closed or not conn.reusable:
                continue
            try:
                return await self._on(conn, data)
            except _Stale:
                continue  # closed by the server while idle: try the next one, or a new one
        conn = await self._open()
        try:
            return await self._on(conn, data)
        except _Stale:  # a new connection is never stale; say it as a reset
            raise ConnectionResetError("the server closed the connection before replying") from None

    async def _on(self, conn: _Connection, data: bytes) -> Reply:
        self._busy.add(conn)
        try:
            reply = await conn.exchange(data)
        finally:
            self._busy.discard(conn)
        if conn.reusable and not conn.closed and len(self._idle) < MAX_IDLE:
            self._idle.append(conn)
        else:
            conn.close()
        return reply

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        max_body = self._max_body
        if self._address is not None:
            try:
                _transport, conn = await loop.create_connection(lambda: _Connection(max_body), *self._address)
                return conn
            except OSError:
                self._address = None  # resolve again: the name may point elsewhere now
        infos = await loop.getaddrinfo(self._host, self._port, type=socket.SOCK_STREAM)
        failure: OSError = OSError(f"cannot resolve {self._host}")
        # Every address the name has, in the resolver's order (localhost: ::1, then
        # 127.0.0.1), as asyncio's own connect does; the first that answers is kept.
        for *_family, sockaddr in infos:
            address = (str(sockaddr[0]), int(sockaddr[1]))
            try:
                _transport, conn = await loop.create_connection(lambda: _Connection(max_body), *address)
            except OSError as exc:
                failure = exc
                continue
            self._address = address
            return conn
        raise failure

    async def aclose(self) -> None:
        for conn in [*self._idle, *self._busy]:
            conn.close()
        self._idle.clear()
        self._busy.clear()
