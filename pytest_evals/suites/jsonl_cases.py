"""Lazy JSON Lines: index line offsets at collection, parse one case when it runs.

Collecting a 35,000-line file keeps only (offset, length) per case. Every problem a
line can have is reported against that line (file:line), and file-level problems
(missing, empty, not a regular file) are reported against the file, so nothing
disappears silently.

Inputs are bounded: only regular files are read (a FIFO would block collection, a
device never ends), a line longer than ``evals_max_line_bytes`` is never held in
memory whole, and a line nested deeper than ``evals_max_json_depth`` is refused
before the parser's recursion can take the session down. Both are per-case ERRORs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The limits live in a module of their own: the plugin sets them on every run without
# importing this reader.
from pytest_evals.hardening.input_limits import DEFAULT_MAX_DEPTH as DEFAULT_MAX_DEPTH
from pytest_evals.hardening.input_limits import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LINE_BYTES
from pytest_evals.hardening.input_limits import max_depth, max_line_bytes
from pytest_evals.hardening.input_limits import set_limits as set_limits
from pytest_evals.hardening.redaction import escape_surrogates
from pytest_evals.model.case_ref import CaseRef
from pytest_evals.model.errors import CaseInputError

BOM = b"\xef\xbb\xbf"



_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


def too_deep(body: bytes, limit: int) -> int | None:
    """The nesting depth of a JSON text when it exceeds ``limit``, else None."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return None  # cannot nest deeper than it has openers: the common, free case
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub(b"", body)):
        if match.group() in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest if deepest > limit else None


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def check_regular_file(path: Path) -> None:
    """Raise CaseInputError unless ``path`` is a regular file (checked without opening it)."""
    shown = display_path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise CaseInputError(f"{shown}: input file not found") from None
    except OSError as exc:
        raise CaseInputError(f"{shown}: cannot read input file: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise CaseInputError(f"{shown}: is a directory, expected a JSONL file")
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
        raise CaseInputError(f"{shown}: is {kind}; input_path must be a regular JSONL file")


def check_input_file(path: Path, suite_file: Path, field: str = "input_path") -> None:
    """:func:`check_regular_file` for the file a suite's ``field`` names: the error
    names the suite file and the field too (a folder or a device is the suite's ERROR)."""
    try:
        check_regular_file(path)
    except CaseInputError as exc:
        raise CaseInputError(f"{suite_file}: field {field!r}: {exc}") from None


class OversizedLine(bytes):
    """The first bytes of a line longer than the limit (the rest is never held)."""

    full_length: int


def _oversized(prefix: bytes, full_length: int) -> OversizedLine:
    line = OversizedLine(prefix)
    line.full_length = full_length
    return line


def line_too_long(path: str | Path, line_no: int, length: int) -> str:
    return (
        f"{display_path(path)}:{line_no}: line is {length} bytes, over the limit of "
        f"{max_line_bytes()} (ini evals_max_line_bytes)"
    )


def nested_too_deep(path: str | Path, line_no: int, depth: int) -> str:
    return (
        f"{display_path(path)}:{line_no}: JSON nested {depth} levels deep, over the limit of "
        f"{max_depth()} (ini evals_max_json_depth)"
    )
_ID_FIELD = re.compile(rb'"id"\s*:')
_UNSAFE = re.compile(r"\s+|::|[\[\]]")


def id_text(value: object) -> str:
    """The id as the data gives it, for telling ids apart (duplicates are judged on it)."""
    return str(value).strip()


def safe_id(value: object) -> str:
    """A case id usable inside a pytest node id (no whitespace, '::' or brackets).

    An id that is already safe is its own node id. Any other is made safe and suffixed
    with a hash of the original, so distinct ids stay distinct: ``a::b``, ``a\\nb`` and
    ``a b`` all read ``a_b`` but end differently, and ``q 1`` is not ``q_1``. Safe ids
    never change again (the function is idempotent).
    """
    raw = id_text(value)
    safe = _UNSAFE.sub("_", escape_surrogates(raw)) or "_"
    if safe == raw:
        return safe
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{safe}~{digest}"


def display_path(path: Path | str) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):
        # Outside the working directory, or a path resolve() refuses (a symlink loop
        # is a RuntimeError before Python 3.13): shown as given.
        return str(path)


def _describe_decode_error(path: Path, line_no: int, exc: UnicodeDecodeError) -> str:
    bad = exc.object[exc.start : exc.start + 1]
    return (
        f"{path}:{line_no}: not valid UTF-8 (byte 0x{bad.hex()} at column {exc.start + 1}); "
        "save the file as UTF-8"
    )


def _raw_lines(fh: Any, limit: int) -> Iterator[bytes]:
    """Lines with their endings; a line over ``limit`` is an :class:`OversizedLine`."""
    while True:
        raw = fh.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield raw
            continue
        # Skip the rest of the line in bounded reads, counting its length.
        total = len(raw)
        while True:
            rest = fh.readline(1 << 20)
            total += len(rest)
            if not rest or rest.endswith(b"\n"):
                break
        yield _oversized(raw[:limit], total)


def iter_lines(path: Path) -> Iterator[tuple[int, int, int, bytes]]:
    """Yield (line number, offset, length, raw bytes without line ending) for each line.

    A line over the size limit yields its first bytes as an :class:`OversizedLine`
    (with the real length), so offsets stay right and the case can name the problem.
    """
    check_regular_file(path)
    with path.open("rb") as fh:
        offset = 0
        for line_no, raw in enumerate(_raw_lines(fh, max_line_bytes()), start=1):
            if isinstance(raw, OversizedLine):
                yield line_no, offset, raw.full_length, raw
                offset += raw.full_length
                continue
            length = len(raw)
            body = raw
            if line_no == 1 and body.startswith(BOM):
                body = body[len(BOM) :]
                # the BOM is not part of the record; skip it when the line is re-read
                offset += len(BOM)
                length -= len(BOM)
            yield line_no, offset, length, body.rstrip(b"\r\n")
            offset += length


def jsonl_refs(path: Path, id_field: str = "id") -> Iterator[CaseRef]:
    """One :class:`CaseRef` per non-blank line; ids from ``id_field`` or ``line-N``."""
    check_regular_file(path)
    seen: dict[str, int] = {}
    count = 0
    shown = display_path(path)
    id_pattern = _ID_FIELD if id_field == "id" else re.compile(rb'"' + re.escape(id_field.encode()) + rb'"\s*:')
    for line_no, offset, length, body in iter_lines(path):
        if not body.strip():
            continue
        count += 1
        error = None
        case_id: str | None = None
        original: str | None = None
        if isinstance(body, OversizedLine):
            error = line_too_long(path, line_no, length)
        elif id_pattern.search(body):
            # Only lines that mention the id field are parsed here: ids must be known
            # at collection, everything else waits until the case runs.
            data = None
            depth = too_deep(body, max_depth())
            if depth is not None:
                error = nested_too_deep(path, line_no, depth)
            else:
                try:
                    data = json.loads(body.decode("utf-8"))
                except (UnicodeDecodeError, ValueError, RecursionError):
                    data = None
            if isinstance(data, dict) and isinstance(data.get(id_field), (str, int)) and str(data[id_field]).strip():
                case_id, original = safe_id(data[id_field]), id_text(data[id_field])
        name = case_id or f"line-{line_no}"
        # Duplicates are judged on the id as written: two ids made safe alike are not one.
        key = original or name
        if key in seen and error is None:
            error = (
                f"{shown}:{line_no}: duplicate id {key!r} (first used at line {seen[key]}); "
                "ids must be unique within a file"
            )
            # The node id gets its unambiguous suffix in case_ids.unique_refs.
        else:
            seen[key] = line_no
        yield CaseRef(
            case_id=name,
            source=f"{shown}:{line_no}",
            line=line_no,
            locator=(str(path), offset, length),
            error=error,
        )
    if count == 0:
        raise CaseInputError(f"{shown}: no cases (the file is empty or has only blank lines)")


if hasattr(os, "pread"):

    def _read_at(path: str | Path, offset: int, length: int) -> bytes:
        # One positioned read without a buffered file object: a third of the cost of
        # open/seek/read, which showed at 35,000 cases.
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.pread(fd, length, offset)
        finally:
            os.close(fd)

else:  # Windows

    def _read_at(path: str | Path, offset: int, length: int) -> bytes:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read(length)


def read_json_line(ref: CaseRef) -> Any:
    """Read and parse the line a ref points at; errors name the file and line."""
    path, offset, length = ref.locator
    if length > max_line_bytes():
        raise CaseInputError(line_too_long(path, ref.line, length))
    raw = _read_at(path, offset, length)
    body = raw.rstrip(b"\r\n")
    depth = too_deep(body, max_depth())
    if depth is not None:
        raise CaseInputError(nested_too_deep(path, ref.line, depth))
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CaseInputError(_describe_decode_error(Path(display_path(path)), ref.line, exc)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseInputError(f"{display_path(path)}:{ref.line}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        # Below the depth limit but still too deep for this interpreter's stack.
        raise CaseInputError(nested_too_deep(path, ref.line, max_depth())) from None
