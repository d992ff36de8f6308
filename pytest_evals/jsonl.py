"""Lazy JSON Lines: index line offsets at collection, parse one case when it runs.

Collecting a 35,000-line file keeps only (offset, length) per case. Every problem a
line can have is reported against that line (file:line), and file-level problems
(missing, empty) are reported against the file, so nothing disappears silently.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_evals.caseref import CaseRef
from pytest_evals.errors import CaseInputError

BOM = b"\xef\xbb\xbf"
_ID_FIELD = re.compile(rb'"id"\s*:')
_UNSAFE = re.compile(r"\s+|::|[\[\]]")


def safe_id(value: object) -> str:
    """A case id usable inside a pytest node id (no whitespace, '::' or brackets)."""
    text = str(value).strip()
    return _UNSAFE.sub("_", text) or "_"


def display_path(path: Path | str) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _describe_decode_error(path: Path, line_no: int, exc: UnicodeDecodeError) -> str:
    bad = exc.object[exc.start : exc.start + 1]
    return (
        f"{path}:{line_no}: not valid UTF-8 (byte 0x{bad.hex()} at column {exc.start + 1}); "
        "save the file as UTF-8"
    )


def iter_lines(path: Path) -> Iterator[tuple[int, int, int, bytes]]:
    """Yield (line number, offset, length, raw bytes without line ending) for each line."""
    with path.open("rb") as fh:
        offset = 0
        for line_no, raw in enumerate(fh, start=1):
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
    if not path.exists():
        raise CaseInputError(f"{display_path(path)}: input file not found")
    if path.is_dir():
        raise CaseInputError(f"{display_path(path)}: is a directory, expected a JSONL file")
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
        if id_pattern.search(body):
            # Only lines that mention the id field are parsed here: ids must be known
            # at collection, everything else waits until the case runs.
            try:
                data = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                data = None
            if isinstance(data, dict) and isinstance(data.get(id_field), (str, int)) and str(data[id_field]).strip():
                case_id = safe_id(data[id_field])
        name = case_id or f"line-{line_no}"
        if name in seen:
            error = (
                f"{shown}:{line_no}: duplicate id {name!r} (first used at line {seen[name]}); "
                "ids must be unique within a file"
            )
            name = f"{name}@line-{line_no}"
        else:
            seen[name] = line_no
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
    raw = _read_at(path, offset, length)
    body = raw.rstrip(b"\r\n")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CaseInputError(_describe_decode_error(Path(display_path(path)), ref.line, exc)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseInputError(f"{display_path(path)}:{ref.line}: invalid JSON: {exc.msg} (column {exc.colno})") from None
