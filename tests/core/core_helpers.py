"""Builders shared by the core tests: suite files, JSONL inputs and summaries.

Tests write real suite files into a ``pytester`` directory and run pytest on them; these
helpers keep each test about the behaviour it checks rather than about file plumbing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

#: Keys of the JSON summary that legitimately differ between two runs of the same suites.
VOLATILE_KEYS = frozenset({"started_at", "duration_s"})

Row = Mapping[str, Any] | str | bytes


def jb(
    expected: bool,
    actual: bool | None,
    *,
    case_id: str | int | None = None,
    question: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One jailbreak_guardrails case (``actual=None`` leaves it out, for generate: true)."""
    row: dict[str, Any] = {}
    if case_id is not None:
        row["id"] = case_id
    row["question"] = question if question is not None else f"question {case_id or ''}".strip()
    row["expected_outcome"] = expected
    if actual is not None:
        row["actual_outcome"] = actual
    row.update(extra)
    return row


def jb_counts(tp: int, tn: int, fp: int, fn: int, prefix: str = "c") -> list[dict[str, Any]]:
    """Jailbreak cases with exactly these confusion counts (ids ``{prefix}-000``...)."""
    pairs = (
        [(True, True)] * tp + [(False, False)] * tn + [(False, True)] * fp + [(True, False)] * fn
    )
    return [jb(e, a, case_id=f"{prefix}-{i:03d}") for i, (e, a) in enumerate(pairs)]


def write_jsonl(root: Path, relpath: str, rows: Iterable[Row], *, newline: bytes = b"\n") -> Path:
    """Write rows (dicts as JSON, str/bytes verbatim) one per line; returns the path."""
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    chunks: list[bytes] = []
    for row in rows:
        if isinstance(row, bytes):
            chunks.append(row)
        elif isinstance(row, str):
            chunks.append(row.encode("utf-8"))
        else:
            chunks.append(json.dumps(row).encode("utf-8"))
    path.write_bytes(b"".join(c + newline for c in chunks))
    return path


def write_suite(root: Path, relpath: str, **fields: Any) -> Path:
    """Write a ``*.eval.yaml`` with these fields (YAML-dumped in the given order)."""
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(fields, sort_keys=False), encoding="utf-8")
    return path


def jb_suite(
    root: Path,
    name: str,
    rows: Sequence[Row],
    thresholds: Mapping[str, Any] | None = None,
    **fields: Any,
) -> Path:
    """A jailbreak_guardrails suite ``{name}.eval.yaml`` reading ``data/{name}.jsonl``."""
    write_jsonl(root, f"data/{name}.jsonl", rows)
    return write_suite(
        root,
        f"{name}.eval.yaml",
        task="jailbreak_guardrails",
        input_path=f"data/{name}.jsonl",
        thresholds=dict(thresholds or {}),
        **fields,
    )


def read_summary(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def suite_by_name(summary: Mapping[str, Any], name: str) -> dict[str, Any]:
    for suite in summary["suites"]:
        if suite["name"] == name:
            found: dict[str, Any] = suite
            return found
    raise AssertionError(
        f"no suite {name!r} in summary; have {[s['name'] for s in summary['suites']]}"
    )


def comparable(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The summary without the keys that differ between runs (timestamps, durations)."""
    return {k: v for k, v in summary.items() if k not in VOLATILE_KEYS}


def error_sections(result: pytest.RunResult) -> str:
    """All of the run's output, for substring checks that must not depend on line order."""
    return str(result.stdout.str())


def collected_ids(result: pytest.RunResult) -> list[str]:
    """Node ids printed by ``--collect-only -q``."""
    return [line for line in result.stdout.lines if "::" in line and not line.startswith(" ")]


def esc(pattern: str) -> str:
    """Make the brackets of a parametrized node id literal in an ``fnmatch_lines`` pattern."""
    return "".join("[[]" if c == "[" else "[]]" if c == "]" else c for c in pattern)
