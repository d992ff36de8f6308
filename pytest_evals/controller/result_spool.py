"""The controller's spool of full case results (details included), on disk.

pytest keeps every test report to the end of the run; the details of a case (prompts,
replies) go here instead, and the report keeps the light part. Read back once per
consumer, in arrival order, by the writers that need the details.

The spool holds everything a case saw, so where it lives and what it is matter:

- *plain data*: one JSON document per line. Reading it back parses text and builds
  dicts, lists, strings and numbers, never objects of a class named in the file, so a
  file swapped by someone else can at worst be wrong data, never run code (pickle would
  run whatever ``__reduce__`` the file names);
- *the run's own folder*: a private folder in pytest's temporary folder for this run
  (``pytest-of-<user>/pytest-N/``, which pytest keeps readable by the user only), or,
  without pytest's temporary folders (``-p no:tmpdir``), a folder of its own made by
  ``tempfile.mkdtemp`` (mode 0700). Never a loose file in the shared system temp folder;
- *removed on every exit path*: :meth:`ResultSpool.close` removes the folder, and the
  aggregator registers it with ``config.add_cleanup``, which pytest runs at the end of
  any run that configured (passed, failed, interrupted by SIGINT or SIGTERM, a writer
  that raised); an ``atexit`` hook covers a process that leaves without unconfiguring.

Encoding: orjson (a declared dependency) writes a result ten times faster than the
standard library's ``json`` on these records; what orjson refuses (a lone surrogate in a
string, a key that is not a string or number, a huge integer) falls back to ``json``
with unknown objects as their text, as every JSON file of the run writes them.
Non-finite floats become ``null``, as every file of the run writes them too.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    import pytest

#: Name of the spool file inside its folder.
SPOOL_FILE = "results.jsonl"
#: Prefix of the spool's folder (in pytest's basetemp, or in the system temp folder).
FOLDER_PREFIX = "pytest-evals-spool-"

_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS


def _plain(value: Any) -> Any:
    """``value`` as JSON can hold it: keys as text, tuples and sets as lists."""
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    return value


def encode_record(data: dict[str, Any]) -> bytes:
    """One result as one line of JSON (newline included)."""
    try:
        return orjson.dumps(data, default=str, option=_ORJSON_OPTIONS | orjson.OPT_APPEND_NEWLINE)
    except (TypeError, orjson.JSONEncodeError):
        pass
    # ensure_ascii escapes lone surrogates (\udXXX), which json.loads reads back as they
    # were. The leading space marks the line for the standard library's reader (orjson
    # would read a huge integer as a float).
    try:
        text = json.dumps(data, default=str)
    except (TypeError, ValueError):
        text = json.dumps(_plain(data), default=str)
    return b" " + text.encode("ascii") + b"\n"


def decode_record(line: bytes) -> dict[str, Any]:
    """A line written by :func:`encode_record`: plain data only."""
    value = json.loads(line) if line[:1] == b" " else orjson.loads(line)
    if not isinstance(value, dict):
        raise ValueError("a spool line is not a JSON object")
    return value


def private_folder(make_base: Callable[[], Path] | None) -> Path:
    """A fresh folder only this user can read: in ``make_base()`` (pytest's basetemp),
    else in the system temp folder."""
    if make_base is not None:
        try:
            return Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=make_base()))
        except (OSError, ValueError):
            pass  # basetemp unusable: fall back to a private folder of our own
    return Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))


#: Spools not yet closed: removed at interpreter exit if nothing closed them before.
_OPEN: weakref.WeakSet[ResultSpool] = weakref.WeakSet()


@atexit.register
def _close_leftovers() -> None:
    for spool in list(_OPEN):
        with contextlib.suppress(Exception):
            spool.close()


class ResultSpool:
    """A private scratch file, read back only by this process.

    The file (and its folder) is created on the first result, so runs without suites
    leave nothing behind. ``folder_base`` gives the folder to create it in (pytest's
    basetemp for this run); it is called at that moment, not before.
    """

    def __init__(self, folder_base: Callable[[], Path] | None = None) -> None:
        self._folder_base = folder_base
        self.folder: Path | None = None
        self.path: Path | None = None
        self._file: IO[bytes] | None = None
        self._closed = False

    @classmethod
    def for_config(cls, config: pytest.Config) -> ResultSpool:
        """The run's spool: in pytest's temporary folder of this run, removed when the
        run ends, however it ends (``config.add_cleanup`` runs on every exit path)."""

        def basetemp() -> Path:
            # Looked up at the first result: pytest's tmpdir plugin may configure after us.
            factory = getattr(config, "_tmp_path_factory", None)
            if factory is None:
                raise ValueError("pytest's tmpdir plugin is off")
            return Path(factory.getbasetemp())

        spool = cls(basetemp)
        config.add_cleanup(spool.close)
        return spool

    def _open(self) -> IO[bytes]:
        if self._closed:
            raise ValueError("the result spool is closed")
        if self._file is None:
            self.folder = private_folder(self._folder_base)
            _OPEN.add(self)
            self.path = self.folder / SPOOL_FILE
            # O_EXCL in a fresh 0700 folder: the file is ours, never one planted there.
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
            self._file = os.fdopen(fd, "ab")
        return self._file

    def append(self, data: dict[str, Any]) -> None:
        self._open().write(encode_record(data))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Every result written so far, with its details, in arrival order."""
        if self._file is None and not self._closed:
            return  # nothing written yet: no file to read (and none created to read it)
        self._open().flush()
        assert self.path is not None
        with self.path.open("rb") as fh:
            for line in fh:
                if line.strip():
                    yield decode_record(line)

    def close(self) -> None:
        """Close and remove the spool and its folder; safe to call more than once."""
        self._closed = True
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        _OPEN.discard(self)
