"""Input limits of the JSONL case reader (:mod:`pytest_evals.suites.jsonl_cases`), set from ini keys.

Kept apart from the reader so that the plugin can set them on every run without
importing it.
"""

from __future__ import annotations

#: A case line is kilobytes; 32 MiB leaves room for long documents.
DEFAULT_MAX_LINE_BYTES = 32 * 2**20
#: Real cases nest a few levels; the limit stays far below Python's recursion limit,
#: which every later step (validation, reports) walks too.
DEFAULT_MAX_DEPTH = 128
_limits = {"max_line_bytes": DEFAULT_MAX_LINE_BYTES, "max_depth": DEFAULT_MAX_DEPTH}


def set_limits(*, max_line_bytes: int, max_depth: int) -> None:
    """Set from the ini keys ``evals_max_line_bytes`` / ``evals_max_json_depth``."""
    _limits["max_line_bytes"] = max_line_bytes
    _limits["max_depth"] = max_depth


def max_line_bytes() -> int:
    return _limits["max_line_bytes"]


def max_depth() -> int:
    return _limits["max_depth"]
