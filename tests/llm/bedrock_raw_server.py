"""A hostile stand-in for Bedrock's runtime endpoint: answers every POST with a scripted
status, headers and body (optionally chunked, with no Content-Length) and records each
request's path and Authorization header."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class RawServer:
    def __init__(self, body: bytes, *, status: int = 200, headers: dict[str, str] | None = None,
                 chunked: bool = False) -> None:
        self.body, self.status, self.headers, self.chunked = body, status, headers or {}, chunked
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                outer.requests.append({"path": self.path, "authorization": self.headers.get("Authorization")})
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                for key, value in outer.headers.items():
                    self.send_header(key, value)
                if outer.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for i in range(0, len(outer.body), 65536):
                        part = outer.body[i:i + 65536]
                        self.wfile.write(b"%x\r\n" % len(part) + part + b"\r\n")
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.send_header("Content-Length", str(len(outer.body)))
                    self.end_headers()
                    self.wfile.write(outer.body)

            do_GET = do_POST

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
