"""Whole-file JSON inputs (a HarpIA file, a red-team run's files), read with bounds.

A JSONL case file is read line by line (:mod:`pytest_evals.suites.jsonl_cases`); these
files are one JSON document each, so they get the same protections as a whole:

- only a regular file is read: a FIFO would block the run forever and ``/dev/zero``
  never ends. The file is opened without blocking and checked on the open descriptor,
  so a path swapped for a FIFO after a check cannot hang the read either;
- at most ``evals_max_json_file_bytes`` are read (:data:`DEFAULT_MAX_FILE_BYTES`);
- nesting deeper than ``evals_max_json_depth`` (the JSONL reader's limit) is refused
  before parsing, as later steps (validation, reports) walk every level recursively.

Problems raise :class:`JsonFileError` (a ``ValueError``) whose message does not name the
file: callers add the name in their own format. Syntax errors stay
``json.JSONDecodeError``, with their line and column.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from pytest_evals.hardening.input_limits import DEFAULT_MAX_FILE_BYTES as DEFAULT_MAX_FILE_BYTES
from pytest_evals.hardening.input_limits import max_depth, max_file_bytes
from pytest_evals.suites.jsonl_cases import BOM, too_deep

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class JsonFileError(ValueError):
    """The file cannot be read as a JSON input (the message does not name it)."""


def read_json_file(path: Path | str) -> Any:
    """The parsed JSON document at ``path``, read with the bounds of the module docstring.

    Raises :class:`FileNotFoundError` (and other ``OSError``) when it cannot be opened,
    :class:`JsonFileError` for a bound or an encoding problem, ``json.JSONDecodeError``
    for a syntax error.
    """
    limit = max_file_bytes()
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
            raise JsonFileError(f"is {kind}; expected a regular JSON file")
        if info.st_size > limit:
            raise JsonFileError(_too_large(info.st_size, limit))
        data = fh.read(limit + 1)
    if len(data) > limit:  # it grew while being read
        raise JsonFileError(_too_large(len(data), limit))
    if data.startswith(BOM):
        data = data[len(BOM) :]
    depth = too_deep(data, max_depth())
    if depth is not None:
        raise JsonFileError(
            f"JSON nested {depth} levels deep, over the limit of {max_depth()} (ini evals_max_json_depth)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonFileError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    del data
    try:
        return json.loads(text)
    except RecursionError:  # the depth check counts brackets; this is a backstop
        raise JsonFileError("JSON nested too deeply to read") from None


def _too_large(size: int, limit: int) -> str:
    return f"is {size} bytes, over the limit of {limit} (ini evals_max_json_file_bytes)"
