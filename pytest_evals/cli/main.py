"""The ``pytest-evals`` console command: one sub-command per module that offers one.

The core's commands are listed in :data:`COMMANDS`; task families add theirs through
their registration (``COMMANDS`` in the family module, see :mod:`pytest_evals.registry.family_registry`).
Each module has ``register(subparsers)`` adding its parser with
``set_defaults(func=...)``; ``func(args)`` returns the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMANDS: tuple[str, ...] = (
    "pytest_evals.cli.compare_runs",
    "pytest_evals.reports.rescore_command",
    "pytest_evals.llm.batch.batch_cli",
    "pytest_evals.regression.power_analysis",
)

#: The core command each core module offers. A core command given on the command line
#: imports only its own module: the full parser imports every family's CLI (numpy,
#: the LLM client, ...), seconds that `pytest-evals compare` in a CI step should not pay.
CORE_COMMANDS: dict[str, str] = {
    "compare": "pytest_evals.cli.compare_runs",
    "rescore": "pytest_evals.reports.rescore_command",
    "batch": "pytest_evals.llm.batch.batch_cli",
    "power": "pytest_evals.regression.power_analysis",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of the core command ``only`` alone."""
    parser = argparse.ArgumentParser(prog="pytest-evals", description="pytest_evals utilities")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if only is not None:
        names: tuple[str, ...] = (CORE_COMMANDS[only],)
    else:
        from pytest_evals.registry.family_registry import registry

        names = (*COMMANDS, *registry().commands)
    for name in names:
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
    args_list = list(sys.argv[1:] if argv is None else argv)
    first = args_list[0] if args_list else None
    parser = build_parser(first if first in CORE_COMMANDS else None)
    args = parser.parse_args(args_list)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except ImportError as exc:
        from pytest_evals.registry.missing_extras import install_hint

        hint = install_hint(exc)
        if hint is None:
            raise
        # A subcommand of an extra that is not installed: say which, not a traceback.
        print(f"pytest-evals {args.command}: {hint}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
