"""A loopback HTTP server answering scripted routes: GET paths with a (status, headers,
body); POST chat completions answer 'yes'. Records every request's path and
Authorization header."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedServer:
    def __init__(self, routes: dict[str, tuple[int, dict[str, str], bytes]] | None = None) -> None:
        self.routes = routes or {}
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                outer.requests.append({"method": "GET", "path": self.path,
                                       "authorization": self.headers.get("Authorization")})
                status, headers, body = outer.routes.get(self.path, (404, {}, b"{}"))
                self._send(status, headers, body)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                outer.requests.append({"method": "POST", "path": self.path,
                                       "authorization": self.headers.get("Authorization")})
                body = {"id": "x", "object": "chat.completion", "created": int(time.time()),
                        "model": request.get("model"),
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "yes"},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}
                self._send(200, {}, json.dumps(body).encode())

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
