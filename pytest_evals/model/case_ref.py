"""Where one case lives, without its payload: what collection produces for each case.

Below the tasks and the input readers (``jsonl``), which both use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class CaseRef:
    """Where one case lives, without its payload."""

    case_id: str
    #: "path:line" (or "path#instance-id"): what error messages and reports point at.
    source: str
    line: int = 0
    #: Task-specific locator (e.g. (offset, length) in a JSONL file).
    locator: Any = None
    #: A problem found at collection (undecodable bytes, duplicate id): the item errors.
    error: str | None = None
    #: Light fields safe to show before loading (e.g. a benchmark's task type).
    meta: dict[str, Any] = field(default_factory=dict)
    #: A short hash of the case's input fields, set when the case is read
    #: (``Task.load_case``): results carry it so a later run pairs only equal inputs.
    fingerprint: str | None = None
