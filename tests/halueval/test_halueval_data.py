"""Loading the real official files: counts, line endings, ids, laziness, field mapping."""

from __future__ import annotations

import sys
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest

from pytest_evals.families.halueval.index import file_refs, read_record
from pytest_evals.families.halueval.items import TASK_TYPES
from pytest_evals.families.halueval.layout import data_file
from pytest_evals.families.halueval.records import to_item

COUNTS = {"qa": 10_000, "dialogue": 10_000, "summarization": 10_000, "general": 4_507}


@pytest.mark.parametrize("task", TASK_TYPES)
def test_record_counts_and_unique_ids(data_dir: Path, task: str) -> None:
    refs = list(file_refs(data_file(data_dir, task), task))
    assert len(refs) == COUNTS[task]
    assert len({r.case_id for r in refs}) == len(refs)
    assert all(r.meta == {"task_type": task} for r in refs)
    assert all(r.error is None for r in refs)


def test_original_general_version_has_5000_records(data_dir: Path) -> None:
    path = data_file(data_dir, "general", "v2023-05-26")
    assert path.parent.name == "general_data_v2023-05-26"
    refs = list(file_refs(path, "general", "v2023-05-26"))
    assert len(refs) == 5_000
    labels = Counter(to_item(read_record(r), "general", r.case_id, r.source).label for r in refs)
    # 977 yes / 4,023 no: the 19.5% the paper reports
    assert labels == {"yes": 977, "no": 4_023}
    # ids never collide with the current version's ids
    assert all(r.case_id.startswith("general-v2023-05-26-") for r in refs)


def test_paired_ids_are_task_and_line(data_dir: Path) -> None:
    refs = list(file_refs(data_file(data_dir, "qa"), "qa"))
    assert [r.case_id for r in refs[:3]] == ["qa-1", "qa-2", "qa-3"]
    assert refs[9_999].case_id == "qa-10000"
    assert refs[1].source.endswith("qa_data.json:2")


def test_general_blank_and_repeated_ids_are_disambiguated_by_line(data_dir: Path) -> None:
    refs = list(file_refs(data_file(data_dir, "general"), "general"))
    by_line = {r.line: r.case_id for r in refs}
    # SOURCE.md: ID "" at line 1975 and "ID" at lines 2059 and 2159
    assert by_line[1975] == "general-line1975"
    assert by_line[2059] == "general-line2059"
    assert by_line[2159] == "general-line2159"
    assert by_line[1] == "general-1"
    assert by_line[4507] == "general-4507"
    # the same ids on a second indexing (stable, nothing depends on state)
    assert [r.case_id for r in file_refs(data_file(data_dir, "general"), "general")] == [
        r.case_id for r in refs
    ]


def test_crlf_general_file_offsets_read_back_exactly(data_dir: Path) -> None:
    path = data_file(data_dir, "general")
    raw = path.read_bytes()
    assert raw.count(b"\r\n") == 4_507  # CRLF on every line
    refs = list(file_refs(path, "general"))
    last = refs[-1]
    _, offset, length = last.locator
    assert offset + length == len(raw)
    record = read_record(last)
    assert record["ID"] == "4507"
    item = to_item(record, "general", last.case_id, last.source)
    assert not item.response.endswith("\r")  # type: ignore[union-attr]
    labels = Counter(
        to_item(read_record(r), "general", r.case_id, r.source).label for r in refs
    )
    assert labels == {"yes": 815, "no": 3_692}


def test_every_official_record_validates(data_dir: Path) -> None:
    for task in TASK_TYPES:
        for ref in file_refs(data_file(data_dir, task), task):
            item = to_item(read_record(ref), task, ref.case_id, ref.source)
            assert item.task_type == task


def test_field_mapping_per_task(data_dir: Path) -> None:
    qa = next(iter(file_refs(data_file(data_dir, "qa"), "qa")))
    item = to_item(read_record(qa), "qa", qa.case_id, qa.source)
    assert item.question == "Which magazine was started first Arthur's Magazine or First for Women?"
    assert item.right_answer == "Arthur's Magazine"
    assert item.hallucinated_answer == "First for Women was started first."
    assert item.knowledge and item.knowledge.startswith("Arthur's Magazine (1844")

    dl = next(iter(file_refs(data_file(data_dir, "dialogue"), "dialogue")))
    item = to_item(read_record(dl), "dialogue", dl.case_id, dl.source)
    assert [t.role for t in item.dialogue_history or []] == ["user", "assistant", "user"]
    assert item.dialogue_history[0].content == "Do you like Iron Man"  # type: ignore[index]
    assert item.question == item.dialogue_history[-1].content  # type: ignore[index]
    assert item.right_answer and item.right_answer.startswith("I like crime fiction!")

    sm = next(iter(file_refs(data_file(data_dir, "summarization"), "summarization")))
    item = to_item(read_record(sm), "summarization", sm.case_id, sm.source)
    assert item.context and item.context.startswith("Marseille, France (CNN)")
    assert item.question is None  # the data has no question; none is invented

    gn = next(iter(file_refs(data_file(data_dir, "general"), "general")))
    item = to_item(read_record(gn), "general", gn.case_id, gn.source)
    assert item.right_answer is None and item.hallucinated_answer is None
    assert item.label == "no" and item.response and item.hallucination_spans == []


def test_collecting_summarization_does_not_hold_documents(data_dir: Path) -> None:
    path = data_file(data_dir, "summarization")
    assert path.stat().st_size > 40_000_000
    tracemalloc.start()
    try:
        refs = list(file_refs(path, "summarization"))
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(refs) == 10_000
    # 10,000 refs of a 47 MB file: a few MB of bookkeeping, no documents
    assert current < 8_000_000, current
    assert peak < 12_000_000, peak
    assert max(sys.getsizeof(r.source) for r in refs) < 200
