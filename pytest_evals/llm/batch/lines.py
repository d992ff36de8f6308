"""Batch input and output lines (the JSONL format of OpenAI's Batch API).

Input: one line per request, ``{"custom_id": <cache key>, "method": "POST", "url":
"/v1/chat/completions", "body": <the body the live request would send>}``. Lines are
written to disk as they are gathered (35,000 prompts are too many to hold) and split
into several input files when one would pass the provider's per-batch limits.

Output and error files: ``{"custom_id", "response": {"status_code", "body"}, "error"}``;
a 200 body is a chat.completion read exactly as the live transport reads one. They are
written to disk with every secret masked (:func:`masked_lines`: a reply may echo the
key), and what is read from them is masked again on its way to the cache and reports.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

# OpenAI's limits per batch input file (defined with the options, which show them).
from pytest_evals.hardening import redaction
from pytest_evals.llm.batch.batch_options import MAX_BYTES as MAX_BYTES
from pytest_evals.llm.batch.batch_options import MAX_LINES as MAX_LINES
from pytest_evals.llm.retry import AttemptError
from pytest_evals.llm.transport.http_transport import Completion, completion_from_json

URL = "/v1/chat/completions"


def input_line(key: str, body: Mapping[str, Any]) -> bytes:
    line = {"custom_id": key, "method": "POST", "url": URL, "body": body}
    return (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


@dataclass
class Chunk:
    """One input file in the making: at most ``max_lines`` lines and ``max_bytes`` bytes."""

    path: Path
    keys: dict[str, list[str]] = field(default_factory=dict)
    size: int = 0
    #: model -> (lines, estimated prompt tokens, max completion tokens) for the dry run.
    models: dict[str, list[int]] = field(default_factory=dict)


class InputWriter:
    """Gathered requests -> input files under ``folder``, split at the limits, deduplicated."""

    def __init__(
        self,
        folder: Path,
        prefix: str,
        *,
        max_lines: int = MAX_LINES,
        max_bytes: int = MAX_BYTES,
        estimate: bool = False,
    ) -> None:
        self.folder = folder
        #: Count estimated tokens per model (the dry run's cost; tokenizing costs time).
        self.estimate = estimate
        self.prefix = prefix
        self.max_lines = max(1, max_lines)
        self.max_bytes = max(1, max_bytes)
        self.chunks: list[Chunk] = []
        self._seen: dict[str, list[str]] = {}
        self._fh: IO[bytes] | None = None
        folder.mkdir(parents=True, exist_ok=True)

    def __len__(self) -> int:
        return len(self._seen)

    def add(self, namespace: str, key: str, body: Mapping[str, Any]) -> None:
        spaces = self._seen.get(key)
        if spaces is not None:
            # Same request from another case (or task namespace): one line answers both.
            if namespace not in spaces:
                spaces.append(namespace)
            return
        data = input_line(key, body)
        chunk = self.chunks[-1] if self.chunks else None
        if chunk is None or len(chunk.keys) >= self.max_lines or (chunk.size and chunk.size + len(data) > self.max_bytes):
            chunk = self._new_chunk()
        assert self._fh is not None
        self._fh.write(data)
        spaces = [namespace]
        self._seen[key] = spaces
        chunk.keys[key] = spaces
        chunk.size += len(data)
        if self.estimate:
            self._count(chunk, body)

    @staticmethod
    def _count(chunk: Chunk, body: Mapping[str, Any]) -> None:
        from pytest_evals.llm.tokens import estimate_completion_tokens, estimate_prompt_tokens

        entry = chunk.models.setdefault(str(body.get("model")), [0, 0, 0])
        entry[0] += 1
        entry[1] += estimate_prompt_tokens(body.get("messages") or [])
        entry[2] += estimate_completion_tokens(body.get("max_tokens"))

    def _new_chunk(self) -> Chunk:
        self.close()
        chunk = Chunk(self.folder / f"{self.prefix}-{len(self.chunks) + 1:03d}.jsonl")
        self._fh = chunk.path.open("wb")
        self.chunks.append(chunk)
        return chunk

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


@dataclass(frozen=True)
class LineResult:
    key: str
    completion: Completion | None
    #: Why the line failed (None: answered).
    error: str | None = None


def read_results(path: Path, requested_model: str = "unknown") -> Iterator[LineResult]:
    """Each line of an output or error file; a line we cannot read is a failed line."""
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
                key = str(line["custom_id"])
            except (ValueError, KeyError, TypeError) as exc:
                yield LineResult(f"?line{n}", None, f"{path.name} line {n}: unreadable ({exc})")
                continue
            yield parse_line(key, line, requested_model)


def masked_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a downloaded file (chunks split anywhere), each with every secret
    form masked, newline included. The forms include their JSON-escaped spelling, so a
    masked line is still the JSON it was."""
    pending = bytearray()
    for chunk in chunks:
        pending += chunk
        end = pending.rfind(b"\n")
        if end < 0:
            continue
        whole = bytes(pending[: end + 1])
        del pending[: end + 1]
        yield from (_masked(line) for line in whole.splitlines(keepends=True))
    if pending:
        yield _masked(bytes(pending))


def _masked(line: bytes) -> bytes:
    if not redaction.active():
        return line
    text = line.decode("utf-8", "surrogateescape")
    if not redaction.contains_secret(text):
        return line
    return redaction.redact(text).encode("utf-8", "surrogateescape")


def parse_line(key: str, line: Mapping[str, Any], requested_model: str) -> LineResult:
    error = line.get("error")
    response = line.get("response") or {}
    status = response.get("status_code") if isinstance(response, Mapping) else None
    body = response.get("body") if isinstance(response, Mapping) else None
    if error or status != 200:
        detail = error or (body.get("error") if isinstance(body, Mapping) else body)
        if isinstance(detail, Mapping):
            detail = detail.get("message") or json.dumps(detail)
        return LineResult(key, None, redaction.redact(f"batch line failed (HTTP {status}): {detail}"))
    try:
        c = completion_from_json(body, requested_model)
    except AttemptError as exc:
        return LineResult(key, None, redaction.redact(f"batch line unusable: {exc.cause}"))
    # A reply that echoes a secret (text, model, finish reason) is kept masked, as live.
    text, model, finish_reason = redaction.redact_obj([c.text, c.model, c.finish_reason])
    # The token log spells the text: a reply that had to be masked keeps none (client.py).
    logprobs = c.logprobs if text == c.text else None
    return LineResult(key, Completion(text, model, c.prompt_tokens, c.completion_tokens, finish_reason, logprobs))
