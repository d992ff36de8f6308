"""The response cache's data on disk: JSON in the database row, never a pickle.

diskcache pickles every value that is not bytes, text or a number, and unpickles any
row whose ``mode`` column says "pickle": a cache folder restored from a CI cache, an
artifact or a shared drive could then run code when a run reads it. So entries are
written as bytes (diskcache stores those as they are) holding a format tag with its
version and the entry's JSON, always in the database row (no value files). Reading
accepts only that: a pickle (planted, or written by an older version), a value file,
another version's tag or JSON that does not decode is an :data:`UNREADABLE` entry,
which the cache treats as a miss (and overwrites with the next answer). Nothing in an
entry is ever executed, and a pickled *key* is never unpickled either.

The folder itself is checked before diskcache opens it (:func:`settings_problem`): its
Settings table feeds attribute names and PRAGMA statements, so a table holding anything
but diskcache's own settings makes the namespace unusable instead.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

#: Version of the entries' data; entries of another version are misses.
FORMAT_VERSION = 2
#: What every entry starts with: the format and its version.
TAG = f"pytest-evals-cache/{FORMAT_VERSION}\n".encode("ascii")
#: Rows up to this size stay in the database (every entry: a reply is bounded by
#: evals_max_response_bytes), so the cache never reads or writes value files.
IN_ROW = 2**30


class _Unreadable:
    """An entry this version does not read (see the module docstring)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNREADABLE"

    def __bool__(self) -> bool:
        return False


UNREADABLE: Any = _Unreadable()


def encode(value: Any) -> bytes:
    """An entry's bytes. ``surrogatepass``: a reply may hold a lone surrogate (JSON
    ``"\\ud800"``), which is kept as it is, not refused."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return TAG + text.encode("utf-8", "surrogatepass")


def decode(data: Any) -> Any:
    """The entry held by ``data``, or UNREADABLE."""
    if not isinstance(data, bytes) or not data.startswith(TAG):
        return UNREADABLE
    try:
        value = json.loads(data[len(TAG) :].decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return UNREADABLE
    return value if isinstance(value, dict) else UNREADABLE


# -- the folder's settings ------------------------------------------------------------------
_PRAGMA_VALUE = re.compile(r"-?\d+|[A-Za-z]+")


def settings_problem(directory: Path) -> str | None:
    """Why diskcache must not open ``directory`` (None: it may).

    diskcache sets an attribute for every row of the Settings table and formats the
    ``sqlite_*`` ones into PRAGMA statements unquoted: only its own settings, with plain
    values, are accepted."""
    import diskcache.core as dc

    db = directory / "cache.db"
    if not db.is_file():
        return None  # a new namespace (or no database yet): diskcache creates it
    known = set(dc.DEFAULT_SETTINGS) | set(dc.METADATA)
    try:
        connection = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
        try:
            rows = connection.execute("SELECT key, value FROM Settings").fetchall()
        finally:
            connection.close()
    except sqlite3.Error:
        return None  # not a database, or no Settings yet: diskcache's own open decides
    for key, value in rows:
        if key not in known:
            return f"its Settings table holds an unknown setting {str(key)[:60]!r}"
        if str(key).startswith("sqlite_") and not (
            isinstance(value, int) or (isinstance(value, str) and _PRAGMA_VALUE.fullmatch(value))
        ):
            return f"its setting {key!r} is not a plain value"
    return None


# -- the Disk ----------------------------------------------------------------------------------
def data_disk(note_problem: Callable[[str], None]) -> type:
    """The ``diskcache.Disk`` subclass the cache opens its folders with (built on first
    use: diskcache is imported only by runs that use the cache). ``note_problem``
    reports an unreadable entry (the cache's warnings)."""
    import diskcache

    # Per Disk class: a process that imported diskcache afresh has a new one.
    return _data_disk(note_problem, diskcache.Disk)


@lru_cache(maxsize=4)
def _data_disk(note_problem: Callable[[str], None], base: type) -> type:
    import diskcache.core as dc

    class DataDisk(base):
        """Stores entries as tagged JSON bytes in the row; reads nothing else."""

        _SETTABLE = frozenset({"_directory", "min_file_size", "pickle_protocol"})

        def __init__(self, directory: str, min_file_size: int = IN_ROW, **_ignored: Any) -> None:
            # Unknown disk_* settings are refused before opening (settings_problem).
            super().__init__(directory, min_file_size=IN_ROW)

        def __setattr__(self, name: str, value: Any) -> None:
            # diskcache sets an attribute per disk_* setting; only these mean anything,
            # and none may replace a method.
            if name in self._SETTABLE:
                if name == "min_file_size":
                    value = IN_ROW  # always in the row, whatever the folder says
                object.__setattr__(self, name, value)

        def store(self, value: Any, read: bool, key: Any = dc.UNKNOWN) -> Any:
            # Entries are dicts; bytes are kept as they are (read back only if tagged).
            if read or type(value) not in (dict, bytes):
                raise TypeError(f"the response cache stores dicts, got {type(value).__name__}")
            return super().store(encode(value) if type(value) is dict else value, False, key)

        def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
            if mode == dc.MODE_RAW and filename is None:
                data = bytes(value) if isinstance(value, (bytes, memoryview)) else None
                entry = decode(data)
            else:  # a pickle, a value file: never opened
                entry = UNREADABLE
            if entry is UNREADABLE:
                self._unreadable()
            return entry

        def get(self, key: Any, raw: bool) -> Any:
            # A pickled key (raw = 0) is returned as its bytes, not loaded: iterating
            # the keys never runs code. This cache's keys are text.
            return super().get(key, True) if raw else bytes(key)

        def remove(self, file_path: str) -> None:
            """Delete a value file (an older version's, replaced now) only if it is in
            this folder: a row may name any path, and diskcache would delete it."""
            root = os.path.realpath(self._directory)
            full = os.path.realpath(os.path.join(root, file_path))
            if os.path.commonpath([root, full]) != root or full == root:
                return
            try:
                os.remove(full)
            except OSError:
                return
            parent = os.path.dirname(full)
            while parent != root and os.path.commonpath([root, parent]) == root:
                try:
                    os.rmdir(parent)  # only empty folders; stops at the first that is not
                except OSError:
                    return
                parent = os.path.dirname(parent)

        def _unreadable(self) -> None:
            root = os.path.dirname(os.path.abspath(self._directory))
            note_problem(
                f"response cache {root}: entries that are not this version's data (written "
                "by an older version, a pickle or corrupt) are treated as misses, never "
                "loaded, and replaced as answers come in"
            )

    return DataDisk
