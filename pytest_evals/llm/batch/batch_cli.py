"""``pytest-evals batch status|cancel``: the batches a cache directory knows about.

``status`` lists every job in the ledger (newest last) with its round, size and state,
and asks the provider for the live state of those still pending. ``cancel`` cancels
pending batches (all, or the ids given); the next ``--evals-batch`` run re-attaches,
keeps what they completed and reports the rest as not answered.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from pytest_evals.llm.batch import ledger


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("batch", help="inspect or cancel the Batch API jobs of a cache directory")
    sub = parser.add_subparsers(dest="batch_command", metavar="COMMAND")
    for name, helptext in (
        ("status", "list the batches this cache directory knows, with their live status"),
        ("cancel", "cancel pending batches (all of them, or the ids given)"),
    ):
        p = sub.add_parser(name, help=helptext, description=helptext)
        p.add_argument("--cache-dir", help="response cache root (default: as pytest --evals-cache-dir would use)")
        p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="variable holding the API key")
        p.add_argument(
            "--base-url",
            help="the endpoint as given to pytest, with its query string or credentials (a gateway's "
            "?key=), which the ledger does not keep; used for the jobs of that endpoint "
            "(default: OPENAI_BASE_URL)",
        )
        if name == "status":
            p.add_argument("--json", action="store_true", help="print the jobs as JSON")
            p.add_argument("--no-refresh", action="store_true", help="show the ledger only, ask the provider nothing")
            p.set_defaults(func=_status)
        else:
            p.add_argument("batch_ids", nargs="*", metavar="BATCH_ID", help="batches to cancel (default: every pending one)")
            p.set_defaults(func=_cancel)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _cache_dir(args: argparse.Namespace) -> Path:
    from pytest_evals.llm.settings import default_cache_dir

    return Path(args.cache_dir).expanduser() if args.cache_dir else default_cache_dir()


def _service(base_url: str, args: argparse.Namespace) -> Any:
    """The service of a job recorded under ``base_url`` (shown form: no credentials, no
    query string): the URL given (``--base-url``, else ``OPENAI_BASE_URL``) when it is the
    same endpoint, since a gateway may need its ``?key=`` or userinfo on every request."""
    from pytest_evals.llm.batch.service import BatchService
    from pytest_evals.llm.secret import Secret
    from pytest_evals.llm.settings import LLMSettings, display_url

    key = os.environ.get(args.api_key_env) or ""
    given = args.base_url or os.environ.get("OPENAI_BASE_URL") or ""
    # Settings register the given URL's credentials as secrets: messages stay masked.
    if given and display_url(LLMSettings(configured_base_url=given).base_url) == base_url:
        base_url = given
    return BatchService(LLMSettings(configured_base_url=base_url, api_key=Secret(key) if key else None))


def _live(jobs: list[ledger.Job], args: argparse.Namespace) -> dict[str, Any]:
    """batch id -> the provider's batch object (pending jobs only); errors are shown, not fatal."""
    out: dict[str, Any] = {}
    services: dict[str, Any] = {}
    for job in jobs:
        if not job.pending or not job.batch_id:
            continue
        service = services.get(job.base_url) or services.setdefault(job.base_url, _service(job.base_url, args))
        try:
            out[job.batch_id] = service.retrieve(job.batch_id)
        except Exception as exc:
            out[job.batch_id] = exc
    for service in services.values():
        service.close()
    return out


def _status(args: argparse.Namespace) -> int:
    cache_dir = _cache_dir(args)
    jobs = ledger.load_jobs(cache_dir)
    live = {} if args.no_refresh else _live(jobs, args)
    rows = []
    for job in jobs:
        row = {
            "job": job.id,
            "batch_id": job.batch_id,
            "endpoint": job.base_url,
            "round": job.round,
            "lines": job.lines,
            "state": job.status,
            "batch_status": job.batch_status,
            "completed": job.completed,
            "failed": job.failed,
            "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(job.created)),
            "note": job.note,
        }
        now = live.get(job.batch_id or "")
        if isinstance(now, Exception):
            row["note"] = f"status unavailable: {now}"
        elif now is not None:
            counts = now.request_counts
            row["batch_status"] = now.status
            if counts is not None:
                row["completed"], row["failed"] = counts.completed, counts.failed
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no batches recorded under {ledger.folder(cache_dir)}")
        return 0
    print(f"batches recorded under {ledger.folder(cache_dir)}:")
    for r in rows:
        print(
            f"{r['batch_id'] or '-':<28} {r['batch_status'] or '-':<12} {r['state']:<10} round {r['round']}  "
            f"{r['completed']}/{r['lines']} completed, {r['failed']} failed  {r['created']}  {r['endpoint']}"
            + (f"  ({r['note']})" if r["note"] else "")
        )
    return 0


def _cancel(args: argparse.Namespace) -> int:
    cache_dir = _cache_dir(args)
    jobs = [j for j in ledger.load_jobs(cache_dir) if j.pending and j.batch_id]
    if args.batch_ids:
        known = {j.batch_id for j in jobs}
        unknown = [b for b in args.batch_ids if b not in known]
        if unknown:
            print(f"pytest-evals batch cancel: not pending in {ledger.folder(cache_dir)}: {', '.join(unknown)}", file=sys.stderr)
            return 1
        jobs = [j for j in jobs if j.batch_id in args.batch_ids]
    if not jobs:
        print("no pending batches to cancel")
        return 0
    status = 0
    for job in jobs:
        assert job.batch_id is not None
        service = _service(job.base_url, args)
        try:
            batch = service.cancel(job.batch_id)
            print(f"{job.batch_id}: {batch.status}")
        except Exception as exc:
            print(f"{job.batch_id}: cannot cancel: {exc}", file=sys.stderr)
            status = 1
        finally:
            service.close()
    return status
