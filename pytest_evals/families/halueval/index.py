"""Lazy case references into the official files: (path, offset, length) per record.

Collection reads each file once as bytes and keeps only offsets; no document is held
in memory. Only the general file (3 MB) is parsed at collection, because its case ids
come from its ``ID`` field.

Case ids are stable: ``<task>-<line>`` for the paired tasks (1-based line in the
file), ``general-<ID>`` for the general task. A general ``ID`` that is blank or used
more than once (the current file has "" once and "ID" twice) cannot identify a record,
so every record carrying it gets ``general-line<N>`` instead; the ids never depend on
which records are sampled or on the order they are read in.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_evals.families.halueval.layout import GeneralVersion
from pytest_evals.model.errors import CaseInputError
from pytest_evals.suites.jsonl_cases import iter_lines, read_json_line, safe_id
from pytest_evals.tasks.task_contract import CaseRef

#: Prefix of general ids per version, so runs on the two versions never pair up.
GENERAL_PREFIX: dict[str, str] = {"current": "general", "v2023-05-26": "general-v2023-05-26"}


def _general_id(body: bytes) -> str | None:
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    value = data.get("ID") if isinstance(data, dict) else None
    if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
        return safe_id(value)
    return None


def case_ids(task: str, general_prefix: str, rows: list[tuple[int, str | None]]) -> list[str]:
    """Stable unique ids for (line number, source ID) rows of one task, whatever the source.

    Paired tasks: ``<task>-<line>``. General: ``<prefix>-<ID>`` where the ID is present and
    unique in the file, else ``<prefix>-line<line>`` (the source has blank and repeated IDs).
    """
    if task != "general":
        # Line numbers are unique, and so are the ids made of them.
        return [f"{task}-{line_no}" for line_no, _ in rows]
    counts = Counter(raw_id for _, raw_id in rows if raw_id is not None)
    seen: set[str] = set()
    out = []
    for line_no, raw_id in rows:
        if raw_id is not None and counts[raw_id] == 1:
            case_id = f"{general_prefix}-{raw_id}"
        else:
            case_id = f"{general_prefix}-line{line_no}"
        if case_id in seen:
            # Only possible if a real ID looks like "line<N>"; keep ids unique anyway.
            case_id = f"{case_id}@{line_no}"
        seen.add(case_id)
        out.append(case_id)
    return out


#: (line number, byte offset, length) of one record in its file.
Row = tuple[int, int, int]


def file_rows(path: Path, task: str, general_version: GeneralVersion = "current") -> list[tuple[str, Row]]:
    """(case id, row) per non-blank line of an official task file, in file order.

    Cheaper than refs: a sampled suite makes :class:`CaseRef` objects only for the
    records it keeps (a 2,000-case sample of a 10,000-line file made 10,000 of them).
    """
    rows: list[Row] = []
    raw_ids: list[tuple[int, str | None]] = []
    general = task == "general"
    for line_no, offset, length, body in iter_lines(path):
        # Blank: empty or ASCII whitespace only (what bytes.strip removes), told apart
        # without copying the line as strip() would (10,000 lines of 600 bytes).
        if not body or body.isspace():
            continue
        rows.append((line_no, offset, length))
        raw_ids.append((line_no, _general_id(body) if general else None))
    if not rows:
        raise CaseInputError(f"{path}: no records (the file is empty or has only blank lines)")
    ids = case_ids(task, GENERAL_PREFIX[general_version], raw_ids)
    return list(zip(ids, rows, strict=True))


def row_ref(path: Path, task: str, case_id: str, row: Row) -> CaseRef:
    """The case reference of one row of :func:`file_rows`."""
    line_no, offset, length = row
    return CaseRef(
        case_id=case_id,
        source=f"{path}:{line_no}",
        line=line_no,
        locator=(str(path), offset, length),
        meta={"task_type": task},
    )


def file_refs(
    path: Path, task: str, general_version: GeneralVersion = "current"
) -> Iterator[CaseRef]:
    """One ref per non-blank line of an official task file."""
    for case_id, row in file_rows(path, task, general_version):
        yield row_ref(path, task, case_id, row)


def read_record(ref: CaseRef) -> Any:
    """The parsed JSON record a file ref points at (errors name file and line)."""
    return read_json_line(ref)
