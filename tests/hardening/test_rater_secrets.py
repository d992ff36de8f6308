"""Red-team rater credentials (issue 30, attack 7).

Every configured header is a credential: none follows a redirect to another origin (only
``Authorization`` used to be dropped, ``X-Api-Key`` was sent on). The rater URL's
password and query, and the header values, are secrets on every process, so no file
the run writes holds them in any form, plain and under ``-n 2``.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.families.redteam.config import RaterSpec
from pytest_evals.families.redteam.raters import HttpRater
from pytest_evals.hardening import redaction

HEADER_KEY = "hdr-literal-SECRET-0a1b2c3d"
ENV_KEY = "hdr-env-SECRET-4e5f6a7b"
PASSWORD = "url-pw-SECRET-8c9d0e1f"
QUERY_TOKEN = "qs-token-SECRET-2a3b4c5d"
SECRETS = [HEADER_KEY, ENV_KEY, PASSWORD, QUERY_TOKEN]


class Recorder:
    """A loopback server: ``/hop/<port>/<status>`` redirects to another server's /rate,
    ``/rate`` answers a score; every request's headers are recorded."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                if length:
                    self.rfile.read(length)
                recorder.requests.append((self.command, self.path, dict(self.headers)))
                parts = self.path.split("?")[0].strip("/").split("/")
                if parts[0] == "hop":
                    self.send_response(int(parts[2]))
                    self.send_header("Location", f"http://127.0.0.1:{parts[1]}/rate")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = json.dumps({"score": 0.5}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers() -> Iterator[tuple[Recorder, Recorder]]:
    a, b = Recorder(), Recorder()
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def _credentials_in(headers: dict[str, str]) -> list[str]:
    lowered = {k.lower(): v for k, v in headers.items()}
    return [k for k in ("x-api-key", "x-env-key", "authorization") if k in lowered]


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_no_credential_follows_a_redirect_to_another_origin(
    servers: tuple[Recorder, Recorder], status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = servers
    monkeypatch.setenv("RATER_TEST_KEY", ENV_KEY)
    spec = RaterSpec(
        type="classifier", url=f"http://rm:{PASSWORD}@127.0.0.1:{a.port}/hop/{b.port}/{status}", timeout=5, retries=0,
        headers={"X-Api-Key": HEADER_KEY, "X-Env-Key": "${RATER_TEST_KEY}"},
    )
    rating = asyncio.run(HttpRater(spec).rate("u", "a"))
    assert rating.score == 0.5
    [(_, _, first)] = a.requests
    assert sorted(_credentials_in(first)) == ["authorization", "x-api-key", "x-env-key"]
    [(method, _, second)] = b.requests
    assert method == ("POST" if status in (307, 308) else "GET")
    assert _credentials_in(second) == [], second


def test_a_same_origin_redirect_keeps_the_credentials(servers: tuple[Recorder, Recorder]) -> None:
    a, _b = servers
    spec = RaterSpec(type="classifier", url=f"http://127.0.0.1:{a.port}/hop/{a.port}/307", timeout=5, retries=0,
                     headers={"X-Api-Key": HEADER_KEY})
    asyncio.run(HttpRater(spec).rate("u", "a"))
    assert [_credentials_in(h) for _m, _p, h in a.requests] == [["x-api-key"], ["x-api-key"]]


SUITE = """
task: redteam
input_path: attacks.jsonl
generate: false
raters:
  - name: http-rm
    type: classifier
    url: "http://rm:{password}@127.0.0.1:{port}/rate?token={token}"
    headers: {{X-Api-Key: "{header}", X-Env-Key: "${{RATER_TEST_KEY}}"}}
    stats: {{mean: 0.0, stdev: 1.0}}
  - name: const
    type: classifier
    callable: "rt_const:constant"
    stats: {{mean: 0.0, stdev: 1.0}}
output_dir: out
run_name: secrets
"""


def _forms() -> set[str]:
    forms: set[str] = set()
    for secret in SECRETS:
        forms |= redaction._encodings(secret)
        forms |= redaction._encodings(f"rm:{secret}")
    return forms


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_no_written_file_holds_a_rater_secret(
    pytester: pytest.Pytester, servers: tuple[Recorder, Recorder], xdist: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _b = servers
    monkeypatch.setenv("RATER_TEST_KEY", ENV_KEY)
    (pytester.path / "rt_const.py").write_text("def constant(payload):\n    return 1.0\n", encoding="utf-8")
    cases = [{"id": f"c{i}", "system_prompt": f"sys {i}", "user_prompt": "hello", "responses": ["hi", "hey"]}
             for i in range(4)]
    (pytester.path / "attacks.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    suite = SUITE.format(password=PASSWORD, port=a.port, token=QUERY_TOKEN, header=HEADER_KEY)
    (pytester.path / "rt.eval.yaml").write_text(suite, encoding="utf-8")
    inputs = {pytester.path / "rt.eval.yaml", pytester.path / "attacks.jsonl"}
    args = ["-p", "no:cacheprovider", "--evals-json", "o/summary.json", "--evals-report-dir", "o/runs",
            "--junitxml", "o/junit.xml", "--html", "o/report.html", "-rA"] + (["-n", "2"] if xdist else [])
    result = pytester.runpytest_subprocess(*args, timeout=120)
    assert result.ret in (0, 1), result.stdout.str()[-3000:]
    assert len(a.requests) == 8  # every response rated: the rater really ran
    forms = _forms()
    written = [p for p in Path(pytester.path).rglob("*") if p.is_file() and p not in inputs]
    assert any(p.name == "config.json" for p in written) and any(p.name == "summary.json" for p in written)
    leaks = [(p.relative_to(pytester.path).as_posix(), f) for p in written
             for f in forms if f in p.read_bytes().decode("utf-8", "replace")]
    assert leaks == []
    out = result.stdout.str() + result.stderr.str()
    assert [f for f in forms if f in out] == []
