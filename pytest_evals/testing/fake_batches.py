"""The files and batches endpoints of the loopback OpenAI-compatible server.

Implements what the openai SDK's ``client.files`` and ``client.batches`` call: upload
(multipart ``POST /v1/files``), metadata and content of a file, create / retrieve /
cancel / list of a batch. A batch stays ``in_progress`` for ``batch_delay`` seconds,
then every input line is answered by the server's responder (the same one that answers
``/v1/chat/completions``), so a test's judge log covers batch lines too. Lines fail
with probability ``batch_failure_rate`` (a seeded draw per custom_id and attempt: the
same line sent again in a later batch may succeed) and go to the error file.
``batch_complete_fraction`` below 1 makes the batch end ``expired`` with only that
share of its lines answered. Inputs over ``batch_max_lines`` make the batch ``failed``,
as the real service does.

The counters (``batches_created``, ``batch_lines``, ...) are part of ``/_stats``; they
are apart from ``received``, which counts interactive chat requests only.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import time
from collections import Counter
from typing import Any, Protocol

from aiohttp import BodyPartReader, web

#: Lines answered between two yields to the loop (retrieve calls stay responsive).
_CHUNK = 500


def _error(message: str, status: int) -> web.Response:
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
    return web.json_response(body, status=status)


class ServingApp(Protocol):
    """What the batch endpoints need of the chat server they are mounted on
    (:class:`~pytest_evals.testing.fake_openai.FakeOpenAIApp`, which imports this module)."""

    #: The server's settings (seed, failure rates, responder).
    config: Any
    def completion_body(self, request: dict[str, Any], reply: Any, n: int) -> dict[str, Any]:
        """A chat completion response as the server shapes it."""
        ...

    def reply_for(self, request: dict[str, Any]) -> Any:
        """The server's reply to one chat request."""
        ...


class BatchStore:
    """Files and batches of one server (touched only from the server's loop thread)."""

    def __init__(self, app: ServingApp) -> None:
        self.app = app
        self.reset()

    def reset(self) -> None:
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.counts: Counter[str] = Counter()
        self.line_attempts: Counter[str] = Counter()
        self._workers: set[asyncio.Task[None]] = set()
        self._n = 0

    def stats(self) -> dict[str, Any]:
        return {
            "batches_created": self.counts["batches_created"],
            "batches_cancelled": self.counts["batches_cancelled"],
            "batch_lines": self.counts["batch_lines"],
            "batch_lines_failed": self.counts["batch_lines_failed"],
            "files_uploaded": self.counts["files_uploaded"],
        }

    def routes(self, app: web.Application) -> None:
        for prefix in ("/v1", ""):
            app.router.add_post(f"{prefix}/files", self.upload)
            app.router.add_get(f"{prefix}/files/{{file_id}}", self.file_info)
            app.router.add_get(f"{prefix}/files/{{file_id}}/content", self.file_content)
            app.router.add_post(f"{prefix}/batches", self.create)
            app.router.add_get(f"{prefix}/batches", self.list_batches)
            app.router.add_get(f"{prefix}/batches/{{batch_id}}", self.retrieve)
            app.router.add_post(f"{prefix}/batches/{{batch_id}}/cancel", self.cancel)

    def _id(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}-fake-{self._n:06d}"

    # -- files ----------------------------------------------------------------------------
    def _add_file(self, data: bytes, filename: str, purpose: str) -> dict[str, Any]:
        file_id = self._id("file")
        info = {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }
        self.files[file_id] = info
        self.contents[file_id] = data
        return info

    async def upload(self, request: web.Request) -> web.Response:
        reader = await request.multipart()
        data, filename, purpose = b"", "upload.jsonl", ""
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue  # a nested multipart: not something the SDK sends
            if part.name == "file":
                filename = part.filename or filename
                data = await part.read()
            elif part.name == "purpose":
                purpose = (await part.text()).strip()
        if not purpose:
            return _error("'purpose' is required", 400)
        self.counts["files_uploaded"] += 1
        return web.json_response(self._add_file(data, filename, purpose))

    async def file_info(self, request: web.Request) -> web.Response:
        info = self.files.get(request.match_info["file_id"])
        return web.json_response(info) if info else _error("No such file", 404)

    async def file_content(self, request: web.Request) -> web.Response:
        data = self.contents.get(request.match_info["file_id"])
        if data is None:
            return _error("No such file", 404)
        return web.Response(body=data, content_type="application/octet-stream")

    # -- batches --------------------------------------------------------------------------
    async def create(self, request: web.Request) -> web.Response:
        payload = await request.json()
        input_id = payload.get("input_file_id")
        if input_id not in self.contents:
            return _error(f"input file {input_id!r} not found", 400)
        endpoint = payload.get("endpoint")
        if endpoint != "/v1/chat/completions":
            return _error(f"endpoint {endpoint!r} not supported by the fake server", 400)
        now = int(time.time())
        batch = {
            "id": self._id("batch"),
            "object": "batch",
            "endpoint": endpoint,
            "errors": None,
            "input_file_id": input_id,
            "completion_window": payload.get("completion_window", "24h"),
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "in_progress_at": None,
            "expires_at": now + 86400,
            "finalizing_at": None,
            "completed_at": None,
            "failed_at": None,
            "expired_at": None,
            "cancelling_at": None,
            "cancelled_at": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "metadata": payload.get("metadata") or None,
        }
        self.batches[batch["id"]] = batch
        self.counts["batches_created"] += 1
        worker = asyncio.ensure_future(self._process(batch))
        self._workers.add(worker)
        worker.add_done_callback(self._workers.discard)
        return web.json_response(batch)

    async def retrieve(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["batch_id"])
        return web.json_response(batch) if batch else _error("No such batch", 404)

    async def cancel(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return _error("No such batch", 404)
        if batch["status"] in ("validating", "in_progress"):
            batch["status"] = "cancelling"
            batch["cancelling_at"] = int(time.time())
            self.counts["batches_cancelled"] += 1
        elif batch["status"] not in ("cancelling",):
            return _error(f"Cannot cancel a batch with status {batch['status']}", 409)
        return web.json_response(batch)

    async def list_batches(self, request: web.Request) -> web.Response:
        limit = int(request.query.get("limit", "20"))
        after = request.query.get("after")
        ordered = sorted(self.batches.values(), key=lambda b: b["id"], reverse=True)
        if after:
            ids = [b["id"] for b in ordered]
            ordered = ordered[ids.index(after) + 1 :] if after in ids else []
        page = ordered[:limit]
        return web.json_response(
            {
                "object": "list",
                "data": page,
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
                "has_more": len(ordered) > limit,
            }
        )

    # -- processing -----------------------------------------------------------------------
    async def _process(self, batch: dict[str, Any]) -> None:
        cfg = self.app.config
        lines = self.contents[batch["input_file_id"]].splitlines()
        batch["request_counts"]["total"] = len(lines)
        problem = self._validate(lines)
        if len(lines) > cfg.batch_max_lines:
            problem = f"{len(lines)} lines: more than this server's limit of {cfg.batch_max_lines} per batch"
        if problem is not None:
            batch["status"], batch["failed_at"] = "failed", int(time.time())
            batch["errors"] = {"object": "list", "data": [{"code": "invalid_file", "message": problem, "line": None}]}
            return
        batch["status"], batch["in_progress_at"] = "in_progress", int(time.time())
        started = time.monotonic()
        # The delay is read on every tick: a test may shorten it while the batch waits.
        while time.monotonic() < started + cfg.batch_delay:
            if batch["status"] == "cancelling":
                break
            await asyncio.sleep(min(0.05, max(0.0, started + cfg.batch_delay - time.monotonic())))
        if batch["status"] == "cancelling":
            batch["status"], batch["cancelled_at"] = "cancelled", int(time.time())
            return
        answer_upto = len(lines)
        if cfg.batch_complete_fraction < 1.0:
            answer_upto = int(len(lines) * max(0.0, cfg.batch_complete_fraction))
        out: list[str] = []
        err: list[str] = []
        for i, raw in enumerate(lines[:answer_upto]):
            line = json.loads(raw)
            ok, text = self._answer(line)
            (out if ok else err).append(text)
            if i % _CHUNK == _CHUNK - 1:
                await asyncio.sleep(0)
        counts = batch["request_counts"]
        counts["completed"], counts["failed"] = len(out), len(err)
        self.counts["batch_lines"] += answer_upto
        self.counts["batch_lines_failed"] += len(err)
        batch["status"] = "finalizing"
        batch["finalizing_at"] = int(time.time())
        if out:
            batch["output_file_id"] = self._add_file("".join(out).encode(), "batch_output.jsonl", "batch_output")["id"]
        if err:
            batch["error_file_id"] = self._add_file("".join(err).encode(), "batch_errors.jsonl", "batch_output")["id"]
        if answer_upto < len(lines):
            batch["status"], batch["expired_at"] = "expired", int(time.time())
        else:
            batch["status"], batch["completed_at"] = "completed", int(time.time())

    @staticmethod
    def _validate(lines: list[bytes]) -> str | None:
        seen: set[str] = set()
        for n, raw in enumerate(lines, 1):
            try:
                line = json.loads(raw)
                custom_id, method, url, body = line["custom_id"], line["method"], line["url"], line["body"]
            except (ValueError, KeyError, TypeError) as exc:
                return f"line {n}: not a batch request line ({exc})"
            if custom_id in seen:
                return f"line {n}: duplicate custom_id {custom_id!r}"
            seen.add(custom_id)
            if method != "POST" or url != "/v1/chat/completions" or not isinstance(body, dict):
                return f"line {n}: expected POST /v1/chat/completions with a JSON body"
        return None

    def _answer(self, line: dict[str, Any]) -> tuple[bool, str]:
        _completion_body = self.app.completion_body  # the app's own shape

        cfg, custom_id = self.app.config, line["custom_id"]
        self.line_attempts[custom_id] += 1
        attempt = self.line_attempts[custom_id]
        request_id = "req_" + hashlib.sha256(f"{custom_id}:{attempt}".encode()).hexdigest()[:20]
        # Drawn on the body, not the custom_id (a cache key, which includes the server's
        # port): the same request fails the same way on every test run.
        body_hash = hashlib.sha256(json.dumps(line["body"], sort_keys=True).encode()).hexdigest()
        draw = random.Random(f"{cfg.seed}:batch:{body_hash}:{attempt}").random()
        if draw < cfg.batch_failure_rate:
            record = {
                "id": self._id("batch_req"),
                "custom_id": custom_id,
                "response": {
                    "status_code": 500,
                    "request_id": request_id,
                    "body": {"error": {"message": "The server had an error (fake batch line).", "type": "server_error"}},
                },
                "error": None,
            }
            return False, json.dumps(record) + "\n"
        body = line["body"]
        reply = self.app.reply_for(body)
        record = {
            "id": self._id("batch_req"),
            "custom_id": custom_id,
            "response": {"status_code": 200, "request_id": request_id, "body": _completion_body(body, reply, 0)},
            "error": None,
        }
        return True, json.dumps(record) + "\n"
