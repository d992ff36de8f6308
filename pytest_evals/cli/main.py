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
from types import ModuleType

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


class CommandModuleError(Exception):
    """A module named as offering commands that cannot offer them (the message says why)."""


def command_module(name: str) -> ModuleType:
    """The module ``name`` of a ``COMMANDS`` list; a missing module, or a library of an
    extra that is not installed, is a :class:`CommandModuleError` saying so. Any other
    error while importing it is a bug of that module and propagates as it is."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        from pytest_evals.registry.missing_extras import install_hint

        hint = install_hint(exc)
        if hint is not None:
            raise CommandModuleError(f"the commands of {name}: {hint}") from exc
        if exc.name is not None and (name == exc.name or name.startswith(f"{exc.name}.")):
            raise CommandModuleError(f"command module {name!r} does not exist ({exc})") from exc
        raise


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
        module = command_module(name)
        try:
            module.register(sub)
        except argparse.ArgumentError as exc:
            raise CommandModuleError(f"the commands of {name}: {exc}") from exc
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    first = args_list[0] if args_list else None
    try:
        parser = build_parser(first if first in CORE_COMMANDS else None)
    except CommandModuleError as exc:
        print(f"pytest-evals: {exc}", file=sys.stderr)
        return 2
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
