"""Input limits of the JSONL case reader (:mod:`pytest_evals.suites.jsonl_cases`) and of
whole-file JSON inputs (:mod:`pytest_evals.suites.json_files`), set from ini keys.

Kept apart from the reader so that the plugin can set them on every run without
importing it.
"""

from __future__ import annotations

#: A case line is kilobytes; 32 MiB leaves room for long documents.
DEFAULT_MAX_LINE_BYTES = 32 * 2**20
#: Real cases nest a few levels; the limit stays far below Python's recursion limit,
#: which every later step (validation, reports) walks too.
DEFAULT_MAX_DEPTH = 128
#: A whole-file JSON input (a HarpIA file, a red-team run's files) is read at once and
#: parsed into objects several times its size: 64 MiB keeps a hostile one under 1 GB.
DEFAULT_MAX_FILE_BYTES = 64 * 2**20
_limits = {
    "max_line_bytes": DEFAULT_MAX_LINE_BYTES,
    "max_depth": DEFAULT_MAX_DEPTH,
    "max_file_bytes": DEFAULT_MAX_FILE_BYTES,
}


def set_limits(*, max_line_bytes: int, max_depth: int, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
    """Set from the ini keys ``evals_max_line_bytes`` / ``evals_max_json_depth`` /
    ``evals_max_json_file_bytes``."""
    _limits["max_line_bytes"] = max_line_bytes
    _limits["max_depth"] = max_depth
    _limits["max_file_bytes"] = max_file_bytes


def max_line_bytes() -> int:
    return _limits["max_line_bytes"]


def max_depth() -> int:
    return _limits["max_depth"]


def max_file_bytes() -> int:
    return _limits["max_file_bytes"]
