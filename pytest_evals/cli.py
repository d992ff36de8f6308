"""The ``pytest-evals`` console command: one sub-command per module that offers one.

The core's commands are listed in :data:`COMMANDS`; task families add theirs through
their registration (``COMMANDS`` in the family module, see :mod:`pytest_evals.families`).
Each module has ``register(subparsers)`` adding its parser with
``set_defaults(func=...)``; ``func(args)`` returns the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMANDS: tuple[str, ...] = (
    "pytest_evals.compare",
    "pytest_evals.reports.rescore",
    "pytest_evals.llm.batch.cli",
    "pytest_evals.regression.power",
)


def build_parser() -> argparse.ArgumentParser:
    from pytest_evals.families import registry

    parser = argparse.ArgumentParser(prog="pytest-evals", description="pytest_evals utilities")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (*COMMANDS, *registry().commands):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue  # a family's fallback path (its former module) that is gone
        try:
            module.register(sub)
        except argparse.ArgumentError:
            continue  # the same command offered again under a former module path
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except ImportError as exc:
        from pytest_evals.extras import install_hint

        hint = install_hint(exc)
        if hint is None:
            raise
        # A subcommand of an extra that is not installed: say which, not a traceback.
        print(f"pytest-evals {args.command}: {hint}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
