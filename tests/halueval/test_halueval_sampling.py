"""Stratified sampling and the seeded right/hallucinated choice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_evals.families.halueval.index import file_refs
from pytest_evals.families.halueval.items import TASK_TYPES
from pytest_evals.families.halueval.layout import data_file
from pytest_evals.families.halueval.sampling import (
    allocate,
    pick,
    shows_hallucinated,
    stratified,
    unit_hash,
)

SIZES = {"qa": 10_000, "dialogue": 10_000, "summarization": 10_000, "general": 4_507}


def test_allocate_keeps_the_task_mix() -> None:
    assert allocate(SIZES, 100) == {"qa": 29, "dialogue": 29, "summarization": 29, "general": 13}
    # 4 items: 1.15, 1.15, 1.15, 0.52 -> the remainder goes to the largest fraction
    assert allocate(SIZES, 4) == {"qa": 1, "dialogue": 1, "summarization": 1, "general": 1}
    assert allocate(SIZES, 0) == {"qa": 0, "dialogue": 0, "summarization": 0, "general": 0}
    assert allocate(SIZES, 10**6) == SIZES
    for n in (1, 7, 40, 333, 34_506):
        split = allocate(SIZES, n)
        assert sum(split.values()) == n
        for k, v in split.items():
            assert abs(v - n * SIZES[k] / sum(SIZES.values())) < 1


def test_allocate_ties_go_to_the_first_listed() -> None:
    assert allocate({"a": 1, "b": 1, "c": 1}, 2) == {"a": 1, "b": 1, "c": 0}
    assert allocate({"c": 1, "b": 1, "a": 1}, 2) == {"c": 1, "b": 1, "a": 0}


def test_pick_is_seeded_nested_and_in_original_order() -> None:
    ids = [f"qa-{i}" for i in range(1, 1001)]
    a = pick(ids, 50, 0, "qa")
    assert a == sorted(a) and len(set(a)) == 50
    assert pick(ids, 50, 0, "qa") == a
    assert pick(ids, 50, 1, "qa") != a
    assert set(a) <= set(pick(ids, 80, 0, "qa"))
    # independent of the order the ids come in
    shuffled = list(reversed(ids))
    assert sorted(ids[i] for i in a) == sorted(shuffled[i] for i in pick(shuffled, 50, 0, "qa"))


def test_stratified_total_and_per_task_sizes(data_dir: Path) -> None:
    strata = {t: list(file_refs(data_file(data_dir, t), t)) for t in TASK_TYPES}
    ids = {t: [r.case_id for r in refs] for t, refs in strata.items()}
    out = stratified(strata, ids, 40, seed=3)
    # 40 * 10,000 / 34,507 = 11.59 (x3), 40 * 4,507 / 34,507 = 5.22: floors 38, two more
    assert {t: len(v) for t, v in out.items()} == {"qa": 12, "dialogue": 12, "summarization": 11, "general": 5}
    assert all(r.meta["task_type"] == t for t, refs in out.items() for r in refs)
    again = stratified(strata, ids, 40, seed=3)
    assert [r.case_id for v in again.values() for r in v] == [r.case_id for v in out.values() for r in v]
    other = stratified(strata, ids, 40, seed=4)
    assert [r.case_id for r in other["qa"]] != [r.case_id for r in out["qa"]]
    per_task = stratified(strata, ids, {"qa": 5, "general": 2}, seed=3)
    assert {t: len(v) for t, v in per_task.items()} == {
        "qa": 5, "dialogue": 10_000, "summarization": 10_000, "general": 2,
    }
    assert stratified(strata, ids, None, seed=3)["general"] == strata["general"]


def test_choice_is_balanced_and_reproducible() -> None:
    ids = [f"qa-{i}" for i in range(1, 10_001)]
    shown = [shows_hallucinated(i, 0) for i in ids]
    assert 4_850 < sum(shown) < 5_150
    assert shown == [shows_hallucinated(i, 0) for i in ids]
    other = [shows_hallucinated(i, 1) for i in ids]
    assert 4_000 < sum(a != b for a, b in zip(shown, other, strict=True)) < 6_000


def test_choice_is_the_same_in_another_process() -> None:
    """No per-process salt (like Python's str hash): every xdist worker agrees."""
    ids = ["qa-1", "dialogue-77", "summarization-9999", "general-line1975"]
    code = (
        "from pytest_evals.families.halueval.sampling import shows_hallucinated, unit_hash;"
        f"print([shows_hallucinated(i, 5) for i in {ids!r}], unit_hash('x', 1))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    ).stdout.strip()
    assert out == f"{[shows_hallucinated(i, 5) for i in ids]} {unit_hash('x', 1)}"


@pytest.mark.parametrize("value", [0.0, 0.5])
def test_unit_hash_range(value: float) -> None:
    assert 0.0 <= unit_hash("a", value) < 1.0


@pytest.mark.parametrize("seed", [0, 7, -3])
@pytest.mark.parametrize("stratum", ["qa", "général"])
def test_pick_is_the_smallest_unit_hashes(seed: int, stratum: str) -> None:
    # pick() hashes a file's ids with the prefix encoded once: it must choose exactly
    # the ids with the smallest unit_hash("halueval-sample", seed, stratum, id).
    ids = [f"qa-{i}" for i in range(1, 400)] + ["general-é", "general-日本", "general-line7", ""]
    for k in (0, 1, 37, len(ids) - 1):
        expected = sorted(
            sorted(range(len(ids)), key=lambda i: unit_hash("halueval-sample", seed, stratum, ids[i]))[:k]
        )
        assert pick(ids, k, seed, stratum) == expected
