"""``pytest-evals viz --watch``: serve the viewer and keep it up to date while a run is written.

A thread polls the data directory's JSON files (name, size, mtime) and rebuilds the page
and its data when they change; the page asks ``version`` every few seconds and fetches
``data.json`` when it moved, re-rendering in place (the selected run, seed, prompt and
attack stay selected). The HTML file on disk is rewritten too, so it is never stale.
"""

from __future__ import annotations

import http.server
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_evals.collection.collector_pause import collector_paused
from pytest_evals.families.redteam.edge_rules import DEFAULT_EDGES, EdgeRules
from pytest_evals.families.redteam.loader import RunData, load_data_dir
from pytest_evals.families.redteam.scoring import PartialScores
from pytest_evals.families.redteam.viewdata import build_payload
from pytest_evals.families.redteam.viewer import render_html

Fingerprint = tuple[tuple[str, int, int], ...]


def fingerprint(data_dir: Path) -> Fingerprint:
    """(path, size, mtime_ns) of every JSON file: a cheap "did anything change?" test."""
    out = []
    for root, _dirs, files in os.walk(data_dir):
        for name in files:
            if name.endswith(".json"):
                path = os.path.join(root, name)
                try:
                    st = os.stat(path)
                except OSError:  # renamed away between listing and stat: the next poll sees it
                    continue
                out.append((path, st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


class LiveViewer:
    """The current page and data of a watched directory (rebuilt on change, thread-safe)."""

    def __init__(
        self, data_dir: Path, output: Path, partial: PartialScores, interval: float, edges: EdgeRules = DEFAULT_EDGES
    ) -> None:
        self.data_dir = data_dir
        self.output = output
        self.partial = partial
        self.edges = edges
        self.interval = interval
        self.version = 0
        self.runs: list[RunData] = []
        self.html = b""
        self.data = b""
        self.seen: Fingerprint = ()
        self.lock = threading.Lock()

    def rebuild(self) -> None:
        from pytest_evals.families.redteam.store import atomic_write_text

        seen = fingerprint(self.data_dir)
        runs = load_data_dir(self.data_dir, self.partial, self.edges)
        with self.lock:
            version = self.version + 1
        with collector_paused():
            payload = build_payload(runs, source=str(self.data_dir), partial=self.partial, watch=self.interval, edges=self.edges)
            payload["version"] = version
            page = render_html(payload)
            data = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
        atomic_write_text(self.output, page)
        with self.lock:
            self.version, self.runs, self.seen = version, runs, seen
            self.html, self.data = page.encode("utf-8"), data

    def changed(self) -> bool:
        return fingerprint(self.data_dir) != self.seen

    def watch(self, stop: threading.Event, on_update: Callable[[LiveViewer], None] | None = None) -> None:
        """Poll until ``stop`` is set; a failed rebuild is reported and retried on the next change."""
        while not stop.wait(self.interval):
            if not self.changed():
                continue
            try:
                self.rebuild()
            except (OSError, ValueError) as exc:
                print(f"pytest-evals viz: could not rebuild: {exc}", flush=True)
                continue
            if on_update is not None:
                on_update(self)

    def handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        live = self
        page_name = "/" + self.output.name

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                with live.lock:
                    routes = {
                        "/": (live.html, "text/html; charset=utf-8"),
                        page_name: (live.html, "text/html; charset=utf-8"),
                        "/data.json": (live.data, "application/json"),
                        "/version": (str(live.version).encode(), "text/plain; charset=utf-8"),
                    }
                if path not in routes:
                    self.send_error(404)
                    return
                body, kind = routes[path]
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
