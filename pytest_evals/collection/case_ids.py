"""Case node ids: unique within a suite by construction.

A task proposes an id per case (the data's ``id``, ``line-N``, ...). Every proposed id
is first made node-id safe (:func:`pytest_evals.suites.jsonl_cases.safe_id`: no whitespace, ``::``
or brackets; an id that had to change ends with a hash of the original, so distinct ids
stay distinct), so brackets are free for the one suffix added here: the second and later
cases proposing the same id become ``<id>[dup-2]``, ``<id>[dup-3]``... A suffixed id holds
a bracket and no proposed id can, and (id, occurrence) pairs are distinct, so no two
cases share a node id whatever ids the data holds (a renaming scheme that produces
plain ids, such as ``a@line-3``, can collide with a real id).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pytest_evals.suites.jsonl_cases import safe_id
from pytest_evals.tasks.task_contract import CaseRef

DUPLICATE_MARK = "dup-"


def unique_refs(refs: Iterable[CaseRef]) -> Iterator[CaseRef]:
    """The refs with safe, unique ``case_id`` values (set in place), in the same order."""
    seen: dict[str, int] = {}
    for ref in refs:
        base = safe_id(ref.case_id)
        occurrence = seen.get(base, 0) + 1
        seen[base] = occurrence
        ref.case_id = base if occurrence == 1 else f"{base}[{DUPLICATE_MARK}{occurrence}]"
        yield ref
