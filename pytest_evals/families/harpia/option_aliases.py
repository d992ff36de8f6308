"""Old spellings of options and ini keys, kept as deprecated aliases of their ``evals`` names.

Every option of the plugin is ``--evals-*`` and every ini key ``evals_*`` (pytest's
junitxml pairs ``--junitxml`` with ``junit_*`` keys the same way). A name that predates
the rule keeps working for a while: the old option is registered with its own ``dest``
and help text naming its replacement; at configure time its value is copied to the new
``dest`` (the new spelling wins when both are given) and one
:class:`EvalsDeprecationWarning` per old name is issued, on the controller only (xdist
workers get the same command line and would repeat it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pytest


class EvalsDeprecationWarning(DeprecationWarning):
    """A pytest_evals option or ini key spelled the old way."""


@dataclass(frozen=True)
class RenamedOption:
    old: str
    new: str
    #: ``dest`` of the new option (the name code reads).
    dest: str

    @property
    def old_dest(self) -> str:
        return "deprecated_" + self.old.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class RenamedIni:
    old: str
    new: str


def add_option_alias(group: pytest.OptionGroup, renamed: RenamedOption, metavar: str | None = None) -> None:
    """Register ``renamed.old`` as a deprecated alias taking one value."""
    group.addoption(
        renamed.old,
        dest=renamed.old_dest,
        metavar=metavar,
        default=None,
        help=f"deprecated alias of {renamed.new}",
    )


def add_ini_alias(parser: pytest.Parser, renamed: RenamedIni) -> None:
    parser.addini(renamed.old, f"deprecated alias of {renamed.new}", default="")


def _warn(config: pytest.Config, old: str, new: str, kind: str) -> None:
    if hasattr(config, "workerinput"):
        return
    config.issue_config_time_warning(
        EvalsDeprecationWarning(f"{kind} {old} is deprecated: use {new} (same meaning)"), stacklevel=2
    )


def apply_aliases(
    config: pytest.Config, options: Iterable[RenamedOption] = (), inis: Iterable[RenamedIni] = ()
) -> None:
    """Copy old options' values to their new ``dest`` and warn once per old name used."""
    for r in options:
        value = getattr(config.option, r.old_dest, None)
        if value is None:
            continue
        if getattr(config.option, r.dest, None) is None:
            setattr(config.option, r.dest, value)
        _warn(config, r.old, r.new, "option")
    for ini in inis:
        if str(config.getini(ini.old) or "").strip():
            _warn(config, ini.old, ini.new, "ini key")


def getini(config: pytest.Config, renamed: RenamedIni) -> Any:
    """The new key's value, else the old key's (an empty value is "not set")."""
    value = config.getini(renamed.new)
    if value in (None, "", []):
        value = config.getini(renamed.old)
    return value
