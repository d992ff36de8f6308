"""``pytest-evals viz [DATA_DIR] -o viz.html [--serve]``: build the red-team viewer."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "viz",
        help="build a self-contained HTML viewer of red-team runs",
        description=(
            "Read runs laid out as DATA_DIR/<evo|bon_iter|pair|one_turn>/<run>/seed_<id>/<hash>.json "
            "and write one HTML file that works offline."
        ),
    )
    parser.add_argument("data_dir", nargs="?", default="data", metavar="DATA_DIR",
                        help="the data directory, a runner directory or one run directory (default: data)")
    parser.add_argument("-o", "--output", default="viz.html", help="HTML file to write (default: viz.html)")
    parser.add_argument("--serve", action="store_true", help="also serve the file on localhost until interrupted")
    parser.add_argument("--host", default="127.0.0.1", help="address for --serve (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port for --serve (0 picks a free one; default: 8000)")
    parser.set_defaults(func=run_viz)


def run_viz(args: argparse.Namespace) -> int:
    from pytest_evals.redteam.viewer import build_viewer_from_dir

    data_dir = Path(args.data_dir)
    try:
        output, runs = build_viewer_from_dir(data_dir, args.output)
    except FileNotFoundError as exc:
        print(f"pytest-evals viz: {exc}", file=sys.stderr)
        return 2
    issues = [issue for run in runs for issue in run.issues]
    for issue in issues:
        print(f"skipped {issue}", file=sys.stderr)
    prompts = sum(len(seed.prompts) for run in runs for seed in run.seeds)
    print(f"wrote {output} ({len(runs)} run(s), {prompts} system prompt(s), {len(issues)} file(s) skipped)")
    if not runs:
        print(f"pytest-evals viz: no runs found under {data_dir}", file=sys.stderr)
    if args.serve:
        serve(output, args.host, args.port)
    return 0


def serve(path: Path, host: str, port: int) -> None:
    """Serve the one file at ``/`` (and its name) until Ctrl-C."""
    import http.server

    body = path.read_bytes()
    name = "/" + path.name

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] not in ("/", name):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer((host, port), Handler)
    print(f"serving {path} at http://{host}:{server.server_address[1]}/ (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
