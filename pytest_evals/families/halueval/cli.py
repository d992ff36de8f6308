"""``pytest-evals halueval download``: fetch the official HaluEval files.

The only command of the project that uses the network, and only when a user runs it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_evals.families.halueval.layout import OFFICIAL_COMMIT


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("halueval", help="HaluEval benchmark utilities")
    sub = parser.add_subparsers(dest="halueval_command", metavar="COMMAND")
    dl = sub.add_parser(
        "download",
        help="download the official HaluEval data files and evaluation instructions",
        description=(
            "Download qa/dialogue/summarization/general_data.json and the official "
            "evaluation instructions (into prompts/) from the official repository "
            f"(RUCAIBox/HaluEval, commit {OFFICIAL_COMMIT[:7]}), checking their sha256."
        ),
    )
    dl.add_argument("--dest", default="data/halueval", help="destination folder (default: data/halueval)")
    dl.add_argument(
        "--base-url",
        default=None,
        help="raw-file server: files are fetched from BASE_URL/REF/<path in the repository> "
        "(default https://raw.githubusercontent.com/RUCAIBox/HaluEval)",
    )
    dl.add_argument("--ref", default=OFFICIAL_COMMIT, help="commit or branch (default: the pinned commit)")
    dl.add_argument(
        "--with-general-v2023-05-26",
        dest="general_v1",
        action="store_true",
        help="also fetch the original 5,000-record general file into general_data_v2023-05-26/",
    )
    verify = dl.add_mutually_exclusive_group()
    verify.add_argument("--verify", dest="verify", action="store_true", default=None,
                        help="check sha256 against the official files (default for the pinned commit)")
    verify.add_argument("--no-verify", dest="verify", action="store_false", help="do not check sha256")
    dl.add_argument("--force", action="store_true", help="download even files that are present")
    dl.set_defaults(func=_download)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _download(args: argparse.Namespace) -> int:
    from pytest_evals.families.halueval.download import (
        DEFAULT_BASE_URL,
        DownloadError,
        download,
        plan,
    )

    dest = Path(args.dest).expanduser()
    items = plan(args.base_url or DEFAULT_BASE_URL, args.ref, args.general_v1, args.verify)
    try:
        download(dest, items, force=args.force)
    except DownloadError as exc:
        print(f"pytest-evals halueval download: {exc}", file=sys.stderr)
        return 1
    print(f"HaluEval data ready in {dest} (set `data_dir: {dest}` in your suite, or keep the default data/halueval)")
    return 0
