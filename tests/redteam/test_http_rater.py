"""The HTTP reward-model rater retries through the shared policy (pytest_evals.llm.retry)."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_evals.families.redteam.config import RaterSpec
from pytest_evals.families.redteam.raters import HttpRater
from pytest_evals.model.errors import InfrastructureError


class Script:
    """Statuses the server answers with, in order; the last one repeats."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, dict[str, str]]] = [(200, {})]
        self.seen: list[float] = []


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            index = min(len(script.seen), len(script.replies) - 1)
            script.seen.append(time.monotonic())
            status, headers = script.replies[index]
            body = json.dumps({"score": 0.25} if status == 200 else {"error": "busy"}).encode()
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/score", script
    finally:
        httpd.shutdown()
        httpd.server_close()


def rater(url: str, retries: int = 2) -> HttpRater:
    return HttpRater(RaterSpec(type="classifier", url=url, retries=retries, timeout=5))


def test_retry_after_is_honoured_before_the_next_attempt(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [(429, {"Retry-After": "1"}), (200, {})]
    result = asyncio.run(rater(url).rate("u", "a"))
    assert result.score == 0.25
    assert len(script.seen) == 2
    # Retry-After: 1 s, plus at most 20 % jitter (the shared Backoff policy).
    assert 0.95 <= script.seen[1] - script.seen[0] <= 1.6


def test_a_client_error_is_not_retried(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [(400, {})]
    with pytest.raises(InfrastructureError, match="HTTP 400"):
        asyncio.run(rater(url).rate("u", "a"))
    assert len(script.seen) == 1


def test_retries_are_bounded_and_the_last_cause_is_named(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [(503, {"Retry-After": "0"})]
    with pytest.raises(InfrastructureError, match=r"no usable reply after 3 attempt\(s\): HTTP 503"):
        asyncio.run(rater(url, retries=2).rate("u", "a"))
    assert len(script.seen) == 3
