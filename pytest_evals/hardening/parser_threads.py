"""Python's ``ast.parse`` made safe for the threads and finalisers of a pytest run.

CPython before 3.13 keeps the AST builder's recursion counter in interpreter-wide state
(python/cpython#106905). Any Python code that runs while a tree is being built, and
parses too, leaves the counter off and the first parse fails with ``SystemError: AST
constructor recursion depth mismatch``. Python code can run there only when the garbage
collector runs a finaliser in the middle of the build: the finaliser itself may parse
(pytest's unraisable-exception hook formats the "Exception ignored" traceback, and Python
3.11 parses each shown line for its carets), or it lets another thread take over, one
that parses (pytest rewriting a module's assertions while our engine thread imports one,
torch parsing its own source as it loads, a traceback formatted anywhere). Seen as a
suite's spurious collection ERROR and as an INTERNALERROR while xdist was being imported.

Two measures: on the affected versions every ``ast.parse`` in the process runs with the
collector paused and under one re-entrant lock (no finaliser can run inside a build, and
no two builds overlap); and our own modules are not rewritten by pytest (they hold no
test asserts, and every lazy import in a thread would otherwise parse there).
"""

from __future__ import annotations

import ast
import gc
import importlib
import sys
import threading
from typing import Any

#: The first CPython whose AST builder keeps its recursion state per call.
_FIXED_IN = (3, 13)

_LOCK = threading.RLock()


def _serialised(parse: Any) -> Any:
    def parse_one_at_a_time(*args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            collecting = gc.isenabled()
            gc.disable()
            try:
                return parse(*args, **kwargs)
            finally:
                if collecting:
                    gc.enable()

    parse_one_at_a_time.__wrapped__ = parse  # type: ignore[attr-defined]
    parse_one_at_a_time.__doc__ = parse.__doc__
    return parse_one_at_a_time


def guard_parser_threads(rewrite_hook: object) -> None:
    """Both measures; called when the plugin registers, before any thread of ours starts."""
    serialise_ast_parse()
    keep_out_of_rewriting(rewrite_hook)


def serialise_ast_parse() -> None:
    """Wrap ``ast.parse`` once per process on the CPython versions that need it."""
    if sys.version_info >= _FIXED_IN or hasattr(ast.parse, "__wrapped__"):
        return
    ast.parse = _serialised(ast.parse)


def keep_out_of_rewriting(rewrite_hook: object, package: str = "pytest_evals") -> None:
    """Undo pytest's marking of this package for assertion rewriting.

    pytest marks every module of an installed plugin's distribution; ours are library
    code, and a module imported later by the engine thread would be parsed there. The
    marked names live in a private set of pytest's hook (absent under ``--assert=plain``):
    if pytest ever renames it, rewriting simply stays on, as before.
    """
    marked = getattr(rewrite_hook, "_must_rewrite", None)
    if isinstance(marked, set):
        for name in [n for n in marked if n == package or n.startswith(package + ".")]:
            marked.discard(name)


def import_plugin_unrewritten(manager: Any, name: str) -> None:
    """pytest's ``import_plugin`` for one of our own plugin modules, without marking it
    for assertion rewriting (``import_plugin`` marks every name it imports).

    Rewriting is also a cost: pytest parses and recompiles each marked module in every
    process, and where bytecode is not written (``PYTHONDONTWRITEBYTECODE``, common in
    containers) it never keeps the result: 21 modules, about 50 ms of each run.
    """
    if manager.is_blocked(name) or manager.get_plugin(name) is not None:
        return
    manager.register(importlib.import_module(name), name)
