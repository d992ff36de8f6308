"""``"package.module:attr"`` strings to objects: one resolver, one kind of error.

Suites name targets, raters and tasks this way, families name their tasks and suite
file readers, the metric registry its classes. All of them go through
:func:`resolve_name`, which uses the standard library's :func:`pkgutil.resolve_name`
and turns its three failures (bad format, module not importable, attribute missing)
into one :class:`ResolveError` that names the field or file the string came from.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable
from types import ModuleType
from typing import Any

FORMAT = "'package.module:attribute'"


class ResolveError(ValueError):
    """A "module:attr" string that names nothing; the message says which field and why."""


def split_spec(spec: str) -> tuple[str, str]:
    """``"pkg.mod:a.b"`` -> ``("pkg.mod", "a.b")``; ValueError unless both parts are given."""
    module, sep, attr = str(spec).strip().partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"expected {FORMAT}")
    return module, attr


def resolve_name(
    spec: str,
    what: str,
    where: str | None = None,
    importer: Callable[[str], ModuleType] | None = None,
) -> Any:
    """The object ``spec`` (``"package.module:attr"``, attr may be dotted) names.

    ``what`` says what the string is ("target", "rater 'rm': field 'callable'", ...) and
    ``where`` the file it came from; both lead the error message. ``importer`` imports
    the module part in a caller's own way (a target module beside its suite file); the
    module it returns must be in ``sys.modules`` under its ``__name__``.
    """
    prefix = f"{where}: " if where else ""
    label = f"{prefix}{what} {spec!r}"
    try:
        module_name, attr = split_spec(spec)
    except ValueError as exc:
        raise ResolveError(f"{label}: {exc}") from None
    try:
        name = module_name if importer is None else importer(module_name).__name__
        return pkgutil.resolve_name(f"{name}:{attr}")
    except ImportError as exc:
        raise ResolveError(f"{label}: cannot import {module_name!r}: {exc}") from exc
    except AttributeError:
        raise ResolveError(f"{label}: module {module_name!r} has no attribute {attr!r}") from None
    except ValueError as exc:  # pkgutil's own format check (e.g. "a b:c")
        raise ResolveError(f"{label}: expected {FORMAT} ({exc})") from None
