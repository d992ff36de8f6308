"""Python's ``ast.parse`` made safe for the threads this plugin starts.

CPython before 3.13 keeps the AST builder's recursion counter in interpreter-wide state
(python/cpython#106905): two threads inside ``ast.parse`` at once (a garbage collection
or a finaliser can switch threads in the middle of building the tree) corrupt it, and one
of them fails with ``SystemError: AST constructor recursion depth mismatch``. A pytest run
of ours has such threads: the engine loop importing a module lazily (pytest rewrites the
assertions of the modules it has marked, parsing their source), the embedder's thread
importing torch (which parses the source of its overloaded functions), Python 3.11's
traceback formatting (which parses each shown line for its carets), while the main thread
collects and rewrites test modules. Seen as one suite's spurious collection ERROR.

Two measures: our own modules are not rewritten by pytest (they hold no test asserts, and
every lazy import in a thread would otherwise parse), and on the affected versions every
``ast.parse`` in the process holds one re-entrant lock, so no two trees are built at once.
"""

from __future__ import annotations

import ast
import sys
import threading
from typing import Any

#: The first CPython whose AST builder keeps its recursion state per call.
_FIXED_IN = (3, 13)

_LOCK = threading.RLock()


def _serialised(parse: Any) -> Any:
    def parse_one_at_a_time(*args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            return parse(*args, **kwargs)

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
        marked.discard(package)
