"""Paths a suite file names (``input_path``, a data folder, an output folder), checked
before anything uses them.

A path can be unusable before the question "does the file exist?" even arises: a
``~nouser/`` prefix names no home folder, a symlink loop or a 5,000-character name makes
every ``stat`` fail, a NUL byte cannot reach the operating system at all. ``pathlib``
raises ``RuntimeError``, ``ValueError`` or ``OSError`` for these, from wherever the path
is first touched; collection used to stop the whole session there. Here each becomes a
:class:`~pytest_evals.model.errors.SuiteConfigError` naming the suite file and the field,
so the suite is one ERROR and the others run.

A path that simply does not exist (yet) is left to the caller, which knows whether that
is an error ("input file not found; looked in ...") or a folder to create.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_evals.model.errors import SuiteConfigError

#: A path shown in a message is cut to this many characters (a hostile one is 5,000).
SHOWN_CHARS = 120


def shown(value: object) -> str:
    """``value`` as a message quotes it: repr, cut past :data:`SHOWN_CHARS`."""
    text = str(value)
    if len(text) <= SHOWN_CHARS:
        return repr(text)
    return f"{text[:SHOWN_CHARS]!r}... ({len(text)} characters)"


def field_of(raw: Mapping[str, Any], value: object) -> str:
    """The (dotted) name of the suite field holding ``value``, for the message; a
    generic word when no field holds it (a path a task built itself)."""
    for key, item in raw.items():
        if item == value:
            return f"field {key!r}"
        if isinstance(item, Mapping):
            for sub, inner in item.items():
                if inner == value:
                    return f"field '{key}.{sub}'"
    return "path"


def expand(relative: str | Path, where: Path, raw: Mapping[str, Any]) -> Path:
    """``Path(relative).expanduser()``, with the unknown user or missing home folder as a
    suite error rather than pathlib's bare ``RuntimeError``."""
    try:
        return Path(relative).expanduser()
    except (RuntimeError, KeyError, ValueError):
        user = str(relative)[1:].split("/", 1)[0] or "the current user"
        raise SuiteConfigError(
            f"{where}: {field_of(raw, relative)} {shown(relative)}: cannot expand '~': "
            f"no home folder known for {user}"
        ) from None


def exists(path: Path) -> bool:
    """``path.exists()`` that answers False for a path the system refuses (too long, a
    loop, a NUL byte) instead of raising; :func:`check_usable` says why."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def path_problem(path: Path) -> str | None:
    """Why ``path`` cannot name a file at all, or None (it exists, or is simply absent)."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None  # absent, or under a file: the caller's "not found" says where it looked
    except OSError as exc:
        # ELOOP (a symlink loop), ENAMETOOLONG, EACCES on a folder on the way, EIO...
        return exc.strerror or type(exc).__name__
    except ValueError as exc:  # an embedded NUL byte
        return str(exc)
    return None


def check_usable(path: Path, relative: str | Path, where: Path, raw: Mapping[str, Any]) -> Path:
    """``path`` when it can be used (it may be absent), else the suite error naming the
    suite file ``where`` and the field that gave ``relative``."""
    problem = path_problem(path)
    if problem is not None:
        raise SuiteConfigError(f"{where}: {field_of(raw, relative)} {shown(relative)}: {problem}")
    return path
