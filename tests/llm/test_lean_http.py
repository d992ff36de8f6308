"""The lean HTTP/1.1 transport (``--evals-transport lean``) against a server that writes
its replies byte by byte as a test scripts them: the framings and faults a real server or
gateway may send (chunked bodies with extensions and trailers, interim 100 replies,
``Connection: close``, bodies ending at the close, keep-alive connections the server
closes while idle, truncated replies, compressed bodies, a body over the cap).

The transport's behaviour shared with the other transports (retries, deadlines, status
errors, the body cap of compression bombs, secrets) is tested with them, parametrized
(test_faults.py, test_outage.py, test_body_bombs.py, test_secrets.py...).
"""

from __future__ import annotations

import gzip
import json
import socket
import socketserver
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_evals.llm import LLMClient, LLMError, LLMSettings
from pytest_evals.llm.secret import Secret

from .conftest import closing, run

#: (connection number, request number on it, request body) -> (bytes to write, close after).
Script = Callable[[int, int, dict[str, Any]], tuple[bytes, bool]]


def completion(text: str) -> bytes:
    return json.dumps({
        "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }).encode()


def reply(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json", *headers]
    if not any(h.lower().startswith(("content-length", "transfer-encoding")) for h in headers):
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def prompt_of(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


class ScriptedServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: Script = lambda conn, n, body: (reply(completion(prompt_of(body))), False)
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []
        self.connections = 0
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(socketserver.BaseRequestHandler):
    server: ScriptedServer

    def handle(self) -> None:
        srv = self.server
        conn = 0  # numbered at its first POST: the endpoint probe's GETs are not counted
        buf = b""
        n = 0
        sock: socket.socket = self.request
        while True:
            while b"\r\n\r\n" not in buf:
                data = sock.recv(65536)
                if not data:
                    return
                buf += data
            head, _, buf = buf.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(buf) < length:
                data = sock.recv(65536)
                if not data:
                    return
                buf += data
            body, buf = buf[:length], buf[length:]
            if not head.startswith(b"POST "):
                # The endpoint probe's GET /models and /props: not served here.
                sock.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                continue
            with srv.lock:
                if not conn:
                    srv.connections += 1
                    conn = srv.connections
                srv.heads.append(head)
                srv.bodies.append(body)
            n += 1
            out, close = srv.script(conn, n, json.loads(body))
            sock.sendall(out)
            if close:
                sock.shutdown(socket.SHUT_RDWR)
                return


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def lean_client(srv: ScriptedServer, tmp_path: Any, **overrides: Any) -> LLMClient:
    fields: dict[str, Any] = {
        "configured_base_url": srv.base_url, "api_key": Secret("sk-lean-test-KEY"),
        "cache_dir": tmp_path / "cache", "timeout": 5.0, "max_retries": 2, "transport": "lean",
        **overrides,
    }
    return LLMClient(LLMSettings(**fields))


def ask_all(client: LLMClient, prompts: list[str], concurrently: bool = False) -> list[str]:
    async def go() -> list[str]:
        if concurrently:
            import asyncio

            replies = await asyncio.gather(*(client.chat(p, namespace="t") for p in prompts))
            return [r.text for r in replies]
        return [(await client.chat(p, namespace="t")).text for p in prompts]

    return run(closing(client, go()))


def test_the_request_is_one_post_with_the_path_query_host_and_key(scripted: ScriptedServer, tmp_path: Any) -> None:
    url = scripted.base_url + "?api-version=2024-06-01"
    client = lean_client(scripted, tmp_path, configured_base_url=url, model="judge-1")
    assert ask_all(client, ["hello"]) == ["hello"]
    head = scripted.heads[0].decode()
    lines = head.split("\r\n")
    assert lines[0] == "POST /v1/chat/completions?api-version=2024-06-01 HTTP/1.1"
    fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert fields["host"] == f"127.0.0.1:{scripted.server_address[1]}"
    assert fields["authorization"] == "Bearer sk-lean-test-KEY"
    assert fields["content-type"] == "application/json"
    assert int(fields["content-length"]) == len(scripted.bodies[0])
    sent = json.loads(scripted.bodies[0])
    assert sent["model"] == "judge-1" and prompt_of(sent) == "hello"


def test_keep_alive_reuses_one_connection(scripted: ScriptedServer, tmp_path: Any) -> None:
    client = lean_client(scripted, tmp_path)
    prompts = [f"q{i}" for i in range(6)]
    assert ask_all(client, prompts) == prompts
    assert scripted.connections == 1


def test_concurrent_requests_each_get_their_own_reply(scripted: ScriptedServer, tmp_path: Any) -> None:
    client = lean_client(scripted, tmp_path, concurrency=8)
    prompts = [f"question {i}" for i in range(40)]
    assert ask_all(client, prompts, concurrently=True) == prompts
    assert 1 < scripted.connections <= 8


def test_chunked_body_with_extensions_and_trailers(scripted: ScriptedServer, tmp_path: Any) -> None:
    def script(conn: int, n: int, body: dict[str, Any]) -> tuple[bytes, bool]:
        payload = completion(prompt_of(body))
        cut = [payload[:7], payload[7:30], payload[30:]]
        chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(c), c) for c in cut)
        return reply(chunks + b"0\r\nX-Trailer: yes\r\n\r\n", "Transfer-Encoding: chunked"), False

    scripted.script = script
    client = lean_client(scripted, tmp_path)
    assert ask_all(client, ["one", "two"]) == ["one", "two"]
    assert scripted.connections == 1  # the chunked framing ended where it should


def test_an_interim_100_reply_is_skipped(scripted: ScriptedServer, tmp_path: Any) -> None:
    scripted.script = lambda conn, n, body: (
        b"HTTP/1.1 100 Continue\r\n\r\n" + reply(completion(prompt_of(body))), False
    )
    assert ask_all(lean_client(scripted, tmp_path), ["after continue"]) == ["after continue"]


def test_connection_close_and_body_until_close(scripted: ScriptedServer, tmp_path: Any) -> None:
    def script(conn: int, n: int, body: dict[str, Any]) -> tuple[bytes, bool]:
        text = prompt_of(body)
        if text.startswith("close"):
            return reply(completion(text), "Connection: close"), True
        # No Content-Length, no chunked: the body ends when the server closes.
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
        return head + completion(text), True

    scripted.script = script
    client = lean_client(scripted, tmp_path)
    prompts = ["close 1", "until eof 2", "close 3", "until eof 4"]
    assert ask_all(client, prompts) == prompts
    assert scripted.connections == 4
    assert client.stats.retries == 0


def test_an_idle_connection_closed_by_the_server_is_not_a_failed_attempt(scripted: ScriptedServer, tmp_path: Any) -> None:
    """A server closing kept-alive connections after each reply (without saying so) is
    what a keep-alive timeout looks like: the next request goes on a new connection at
    once; no retry is counted and no backoff is waited."""
    scripted.script = lambda conn, n, body: (reply(completion(prompt_of(body))), True)
    client = lean_client(scripted, tmp_path, max_retries=0)
    prompts = [f"p{i}" for i in range(5)]

    async def go() -> list[str]:
        import asyncio

        out = []
        for p in prompts:
            out.append((await client.chat(p, namespace="t")).text)
            await asyncio.sleep(0.05)  # the server's close arrives while the connection idles
        return out

    assert run(closing(client, go())) == prompts
    assert scripted.connections == 5
    assert client.stats.retries == 0 and client.stats.errors == 0


def test_a_reply_cut_in_the_middle_is_a_connection_error_then_retried(scripted: ScriptedServer, tmp_path: Any) -> None:
    def script(conn: int, n: int, body: dict[str, Any]) -> tuple[bytes, bool]:
        full = reply(completion(prompt_of(body)))
        return (full[: len(full) - 20], True) if conn == 1 else (full, False)

    scripted.script = script
    client = lean_client(scripted, tmp_path, max_retries=1)
    assert ask_all(client, ["cut once"]) == ["cut once"]
    assert client.stats.retries == 1
    client = lean_client(scripted, tmp_path, max_retries=0, cache_dir=tmp_path / "other")
    scripted.script = lambda conn, n, body: (reply(completion("x" * 50))[:-20], True)
    with pytest.raises(LLMError, match="connection error: ConnectionResetError: the server closed the connection in the middle of its reply"):
        ask_all(client, ["always cut"])


def test_gzip_and_deflate_bodies_are_decoded(scripted: ScriptedServer, tmp_path: Any) -> None:
    import zlib

    def script(conn: int, n: int, body: dict[str, Any]) -> tuple[bytes, bool]:
        text = prompt_of(body)
        if text == "gzip":
            return reply(gzip.compress(completion(text)), "Content-Encoding: gzip"), False
        return reply(zlib.compress(completion(text)), "Content-Encoding: deflate"), False

    scripted.script = script
    assert ask_all(lean_client(scripted, tmp_path), ["gzip", "deflate"]) == ["gzip", "deflate"]


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", "response body larger than 1000 bytes"),
        (b"SPDY/3 200 OK\r\nContent-Length: 2\r\n\r\n{}", "malformed response body: not an HTTP/1.x status line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\n{}", "malformed response body: Content-Length '2, 3' is not one number"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n{}", "malformed response body: Transfer-Encoding 'gzip' is not chunked"),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 2\r\n\r\n{}", "Content-Encoding 'br' is not supported"),
        ("HTTP/1.1 2\u00b2\u00b2 OK\r\nContent-Length: 2\r\n\r\n{}".encode("latin-1"), "not an HTTP/1.x status line"),
        ("HTTP/1.1 200 OK\r\nContent-Length: \u00b2\r\n\r\n{}".encode("latin-1"), "is not one number"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"),
    ],
    ids=["over-the-cap", "not-http", "two-lengths", "unknown-framing", "brotli", "superscript-status",
         "superscript-length", "bad-chunk-size"],
)
def test_a_reply_this_parser_refuses_is_a_clear_error(
    scripted: ScriptedServer, tmp_path: Any, response: bytes, message: str
) -> None:
    scripted.script = lambda conn, n, body: (response, True)
    client = lean_client(scripted, tmp_path, max_retries=0, max_body_bytes=1000)
    with pytest.raises(LLMError, match=message):
        ask_all(client, ["anything"])


def test_a_chunked_body_over_the_cap_is_not_read(scripted: ScriptedServer, tmp_path: Any) -> None:
    chunk = b"x" * 600
    scripted.script = lambda conn, n, body: (
        reply(b"%x\r\n%s\r\n" % (len(chunk), chunk) * 3 + b"0\r\n\r\n", "Transfer-Encoding: chunked"), False
    )
    client = lean_client(scripted, tmp_path, max_retries=2, max_body_bytes=1000)
    with pytest.raises(LLMError, match="failed after 1 attempt: response body larger than 1000 bytes"):
        ask_all(client, ["big"])


def test_a_key_that_would_split_the_request_is_refused_unsent(scripted: ScriptedServer, tmp_path: Any) -> None:
    """A key read from a file with its newline (or worse) never reaches a header; the
    error says what is wrong without repeating the key."""
    for key in ("sk-abc\r\nX-Injected: 1", "sk-abc\n", "sk-\0abc"):
        with pytest.raises(ValueError, match="holds a line break or a NUL") as info:
            lean_client(scripted, tmp_path, api_key=Secret(key))
        assert "sk-abc" not in str(info.value) and "abc" not in str(info.value)
    assert scripted.heads == []


def test_a_host_name_is_resolved_and_its_working_address_kept(scripted: ScriptedServer, tmp_path: Any) -> None:
    """``localhost`` may resolve to ::1 first while the server listens on 127.0.0.1 only:
    each address is tried in turn, as asyncio's own connect does."""
    url = f"http://localhost:{scripted.server_address[1]}/v1"
    client = lean_client(scripted, tmp_path, configured_base_url=url, concurrency=4)
    prompts = [f"by name {i}" for i in range(12)]
    assert ask_all(client, prompts, concurrently=True) == prompts
    fields = dict(line.split(": ", 1) for line in scripted.heads[0].decode().split("\r\n")[1:])
    assert fields["Host"] == f"localhost:{scripted.server_address[1]}"
