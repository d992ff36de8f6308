"""The report's case-detail store: entries streamed into one embedded data element.

pytest-html keeps every row as HTML inside a JSON string inside an HTML attribute, where
each quote costs six bytes and each angle bracket four. Case details instead go, as JSON
lines, into one ``<script type="application/json">`` element that the report's script
renders when a row is opened. Small stores are embedded as they are; larger ones are
deflated and base64-encoded (the browser inflates them with ``DecompressionStream``),
which shrinks repetitive judge prompts several times over. Entries are compressed as
they arrive, so the controller holds the compressed bytes, not 35,000 dicts.
"""

from __future__ import annotations

import base64
import json
import zlib

from pytest_evals.output.html_templating import macros, script_json

#: Below this many bytes of JSON lines the store is embedded uncompressed.
RAW_LIMIT = 1_000_000


class DetailStore:
    def __init__(self, raw_limit: int = RAW_LIMIT) -> None:
        self.raw_limit = raw_limit
        self._compressor = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS)
        self._compressed: list[bytes] = []
        self._compressed_size = 0
        self._raw: list[str] | None = []
        self.raw_size = 0
        self.count = 0
        self._final: tuple[str, str] | None = None

    def add(self, entry: dict[str, object]) -> int:
        """Append an entry; returns its key (its position in the store)."""
        assert self._final is None, "store already finished"
        line = script_json(entry) + "\n"
        data = line.encode("utf-8")
        self.raw_size += len(data)
        out = self._compressor.compress(data)
        if out:
            self._compressed.append(out)
            self._compressed_size += len(out)
        if self._raw is not None:
            self._raw.append(line)
            if self.raw_size > self.raw_limit:
                self._raw = None  # from now on only the compressed form is kept
        key = self.count
        self.count += 1
        return key

    def embedded_size(self) -> int:
        """Approximate bytes this store will take in the page (for the size budget)."""
        if self._raw is not None:
            return self.raw_size
        # Output still buffered inside the compressor is at most a window's worth.
        return (self._compressed_size + 32_768) * 4 // 3

    def finish(self) -> tuple[str, str]:
        """(encoding, payload): "json-lines" text or "deflate-base64" text."""
        if self._final is None:
            tail = self._compressor.flush()
            if self._raw is not None:
                self._final = ("json-lines", "".join(self._raw))
            else:
                payload = base64.b64encode(b"".join([*self._compressed, tail])).decode("ascii")
                self._final = ("deflate-base64", payload)
            self._compressed = []
            self._raw = None
        return self._final

    def html_parts(self, *, strip_video: bool = False, dropped: dict[str, int] | None = None) -> tuple[str, str, str]:
        """(opening tag, payload, closing tag) of the store's element, to be joined once."""
        encoding, payload = self.finish()
        # payload is script-safe: JSON lines went through script_json, base64 has no "<".
        element = macros("pytest_evals.reports", "case_store.jinja2")
        return str(element.opening(encoding, self.count, strip_video, dropped or None)), payload, str(element.closing())

    def html(self, *, strip_video: bool = False, dropped: dict[str, int] | None = None) -> str:
        return "".join(self.html_parts(strip_video=strip_video, dropped=dropped))


def decode(encoding: str, payload: str) -> list[dict[str, object]]:
    """The entries of an embedded store (what the browser does, for tests and tools)."""
    if encoding == "deflate-base64":
        text = zlib.decompress(base64.b64decode(payload)).decode("utf-8")
    else:
        text = payload
    return [json.loads(line) for line in text.splitlines() if line.strip()]
