"""Lazy loading: collecting a 35,000-line suite keeps (offset, length) per case, not the cases.

Collection reads a suite's cases through ``Task.case_refs`` -> ``jsonl_refs``; the
35,000-line check runs there directly (a pytest collection of 35,000 items takes longer
than this whole module should, and is measured by ``bench/bench_core.py``). The
item-level check runs a real collection of a smaller file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from core_helpers import write_suite

from pytest_evals.suites.jsonl_cases import jsonl_refs, read_json_line
from pytest_evals.tasks.task_contract import CaseRef

N_CASES = 35_000
N_ITEMS = 3_000
#: Each line carries this much text, so that keeping parsed cases would show in memory.
PAYLOAD = 1_000


def _deep_size(obj: Any, seen: set[int]) -> int:
    """Bytes held by ``obj`` and everything it references (shared objects counted once)."""
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(_deep_size(k, seen) + _deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        size += sum(_deep_size(x, seen) for x in obj)
    elif hasattr(obj, "__dict__"):
        size += _deep_size(vars(obj), seen)
    return size


def _write_cases(path: Path, n: int) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            row: dict[str, Any] = {
                "question": f"PAYLOAD-{i} " + "x" * PAYLOAD,
                "expected_outcome": i % 3 == 0,
            }
            row["actual_outcome"] = (
                row["expected_outcome"] if i % 10 else not row["expected_outcome"]
            )
            if i % 2 == 0:  # half the lines have ids (those are parsed once for the id)
                row = {"id": f"case-{i:05d}", **row}
            fh.write(json.dumps(row) + "\n")
    return path


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_cases(tmp_path_factory.mktemp("lazy") / "big.jsonl", N_CASES)


def _check_refs_hold_no_payload(refs: list[CaseRef], path: Path, n: int) -> None:
    assert len(refs) == n
    assert len({r.case_id for r in refs}) == n
    for ref in refs:
        assert ref.meta == {} and ref.error is None
        assert "PAYLOAD" not in ref.case_id and "PAYLOAD" not in ref.source
        _file, offset, length = ref.locator
        assert isinstance(offset, int) and isinstance(length, int)
    # offsets are in file order and the lines tile the file
    assert [r.locator[1] for r in refs[:3]] == [
        0,
        refs[0].locator[2],
        refs[0].locator[2] + refs[1].locator[2],
    ]
    last = refs[-1].locator
    assert last[1] + last[2] == path.stat().st_size
    # a few hundred bytes per case: less than the text each line carries, so no ref
    # can be holding its parsed case
    per_case = _deep_size(refs, set()) / n
    assert per_case < 0.7 * PAYLOAD, f"{per_case:.0f} bytes per case ref"


def test_jsonl_refs_keep_only_offsets(big_file: Path) -> None:
    refs = list(jsonl_refs(big_file))
    _check_refs_hold_no_payload(refs, big_file, N_CASES)
    assert refs[0].case_id == "case-00000" and refs[1].case_id == "line-2"
    # a ref is enough to load its case on demand
    case = read_json_line(refs[34_999])
    assert case["question"].startswith("PAYLOAD-34999 ")


def test_collected_items_keep_refs_not_cases(pytester: pytest.Pytester) -> None:
    path = _write_cases(pytester.path / "cases.jsonl", N_ITEMS)
    write_suite(
        pytester.path, "big.eval.yaml", task="jailbreak_guardrails", input_path="cases.jsonl"
    )
    items, _ = pytester.inline_genitems("-p", "no:cacheprovider")
    assert len(items) == N_ITEMS
    assert items[0].nodeid == "big.eval.yaml::case-00000"
    assert items[-1].nodeid == f"big.eval.yaml::line-{N_ITEMS}"
    refs = [item.ref for item in items]  # type: ignore[attr-defined]
    _check_refs_hold_no_payload(refs, path, N_ITEMS)
    # nothing was evaluated or attached to the items at collection
    assert all(item.evals_result is None for item in items)  # type: ignore[attr-defined]
    assert all(not hasattr(item, "case") for item in items)
