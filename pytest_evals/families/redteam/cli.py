"""``pytest-evals viz [DATA_DIR] -o viz.html [--serve | --watch]``: build the red-team viewer."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_evals.families.redteam.loader import RunData

#: Exit status when DATA_DIR holds no run (the page would be empty).
NO_RUNS = 1


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "viz",
        help="build a self-contained HTML viewer of red-team runs",
        description=(
            "Read runs laid out as DATA_DIR/<evo|bon_iter|pair|one_turn>/<run>/seed_<id>/<hash>.json "
            "(and rm-bias's DATA_DIR/<runner>/<run>/final_stats/seed_<i>.json attribute statistics) "
            "and write one HTML file that works offline."
        ),
    )
    parser.add_argument("data_dir", nargs="?", default="data", metavar="DATA_DIR",
                        help="the data directory, a runner directory or one run directory (default: data)")
    parser.add_argument("-o", "--output", default="viz.html", help="HTML file to write (default: viz.html)")
    parser.add_argument("--serve", action="store_true", help="also serve the file on localhost until interrupted")
    parser.add_argument("--watch", action="store_true",
                        help="serve on localhost and keep the page up to date while runs are written (implies --serve)")
    parser.add_argument("--interval", type=float, default=2.0,
                        help="seconds between checks for new data with --watch (default: 2)")
    parser.add_argument("--partial-scores", choices=("average", "na"), default="average",
                        help="a rater's mean over an attack when some normalized_scores are missing: "
                             "'average' the present ones (rm-bias, default) or 'na' (N/A, with the reason shown)")
    parser.add_argument("--edge-rules", choices=("rm-bias", "ours"), default="rm-bias",
                        help="how five edge cases are read: 'rm-bias' as their viewer does (default) or 'ours' "
                             "(stored score for an attack without responses, first of two ratings by one rater, "
                             "order by computed mean, files without rating_function_type/ratings skipped, "
                             "text scores read); the page lists the rules and why one might want ours")
    parser.add_argument("--host", default="127.0.0.1", help="address for --serve (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port for --serve (0 picks a free one; default: 8000)")
    parser.set_defaults(func=run_viz)


def report(runs: list[RunData]) -> None:
    """Skipped files and files whose name is not their prompt's hash, on stderr."""
    from pytest_evals.families.redteam.convert import hash_system_prompt

    for run in runs:
        for issue in run.issues:
            print(f"skipped {issue}", file=sys.stderr)
        for seed in run.seeds:
            for record in seed.prompts:
                if not record.hash_ok:
                    expected = hash_system_prompt(record.stats.system_prompt)
                    print(f"warning: {record.path}: file name is not its system prompt's hash "
                          f"(expected {expected}.json)", file=sys.stderr)


def no_runs_message(data_dir: Path) -> str:
    return (f"pytest-evals viz: no runs found under {data_dir} (expected DATA_DIR/<evo|bon_iter|pair|one_turn>/"
            "<run>/seed_<id>/<hash>.json, a runner directory or one run directory); nothing written")


def run_viz(args: argparse.Namespace) -> int:
    from pytest_evals.families.redteam.loader import load_data_dir
    from pytest_evals.families.redteam.viewer import build_viewer

    data_dir = Path(args.data_dir)
    if args.watch:
        return run_watch(args, data_dir)
    try:
        runs = load_data_dir(data_dir, args.partial_scores, args.edge_rules)
    except FileNotFoundError as exc:
        print(f"pytest-evals viz: {exc}", file=sys.stderr)
        return 2
    if not runs:
        print(no_runs_message(data_dir), file=sys.stderr)
        return NO_RUNS
    output = build_viewer(runs, args.output, source=str(data_dir), partial=args.partial_scores, edges=args.edge_rules)
    report(runs)
    skipped = sum(len(run.issues) for run in runs)
    prompts = sum(len(seed.prompts) for run in runs for seed in run.seeds)
    attributes = sum(len(run.attribute_stats) for run in runs)
    # Appended, so the line's earlier wording stays what scripts may match.
    also = f"; {attributes} final_stats file(s): pytest-evals attribute-stats lists them" if attributes else ""
    print(f"wrote {output} ({len(runs)} run(s), {prompts} system prompt(s), {skipped} file(s) skipped{also})")
    if args.serve:
        serve(output, args.host, args.port)
    return 0


def run_watch(args: argparse.Namespace, data_dir: Path) -> int:
    import http.server
    import threading

    from pytest_evals.families.redteam.live import LiveViewer

    if not data_dir.is_dir():
        print(f"pytest-evals viz: {data_dir}: not a directory", file=sys.stderr)
        return 2
    if args.interval <= 0:
        print("pytest-evals viz: --interval must be positive", file=sys.stderr)
        return 2
    from pytest_evals.families.redteam.loader import find_runs

    if not any(True for _ in find_runs(data_dir)):
        print(no_runs_message(data_dir), file=sys.stderr)
        return NO_RUNS
    live = LiveViewer(data_dir, Path(args.output), args.partial_scores, args.interval, args.edge_rules)
    live.rebuild()
    report(live.runs)
    server = http.server.ThreadingHTTPServer((args.host, args.port), live.handler())
    stop = threading.Event()

    def updated(v: LiveViewer) -> None:
        prompts = sum(len(seed.prompts) for run in v.runs for seed in run.seeds)
        print(f"updated {v.output} (version {v.version}: {len(v.runs)} run(s), {prompts} system prompt(s))", flush=True)

    watcher = threading.Thread(target=live.watch, args=(stop, updated), daemon=True)
    watcher.start()
    print(f"watching {data_dir}; serving {live.output} at http://{args.host}:{server.server_address[1]}/ "
          "(the page reloads its data; Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        server.server_close()
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
