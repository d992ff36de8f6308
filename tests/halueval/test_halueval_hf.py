"""Hugging Face datasets source, offline: datasets saved locally with save_to_disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evals.families.halueval import hf
from pytest_evals.families.halueval.index import file_refs, read_record
from pytest_evals.families.halueval.items import TASK_TYPES
from pytest_evals.families.halueval.layout import data_file
from pytest_evals.families.halueval.records import to_item
from pytest_evals.model.errors import CaseInputError

datasets = pytest.importorskip("datasets")

ROWS = 25


def first_records(data_dir: Path, task: str, n: int = ROWS) -> list[dict[str, object]]:
    out = []
    with data_file(data_dir, task).open(encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if len(out) == n:
                break
    return out


@pytest.fixture(scope="module")
def saved(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two layouts: a DatasetDict keyed by task, and one sub-directory per task."""
    base = tmp_path_factory.mktemp("hf")
    by_key = base / "dict"
    records = {t: first_records(data_dir, t) for t in TASK_TYPES}
    # the general file's ID "" must survive; make one repeat, as in the real file
    records["general"][3]["ID"] = ""
    records["general"][5]["ID"] = records["general"][6]["ID"]
    datasets.DatasetDict({t: datasets.Dataset.from_list(r) for t, r in records.items()}).save_to_disk(str(by_key))
    per_dir = base / "per_task"
    for t, r in records.items():
        datasets.DatasetDict({"data": datasets.Dataset.from_list(r)}).save_to_disk(str(per_dir / t))
    hf.load.cache_clear()
    return by_key, per_dir


@pytest.mark.parametrize("layout", [0, 1])
def test_hf_rows_map_to_the_same_items_as_the_files(saved: tuple[Path, Path], data_dir: Path, layout: int) -> None:
    name = str(saved[layout])
    for task in ("qa", "dialogue", "summarization"):
        refs = list(hf.hf_refs(name, task, "data"))
        assert len(refs) == ROWS
        file_items = [
            to_item(read_record(r), task, r.case_id, r.source)
            for r, _ in zip(file_refs(data_file(data_dir, task), task), range(ROWS), strict=False)
        ]
        hf_items = [to_item(hf.read_row(r), task, r.case_id, r.source) for r in refs]
        assert [i.id for i in hf_items] == [i.id for i in file_items] == [f"{task}-{n}" for n in range(1, ROWS + 1)]
        strip = {"source"}
        assert [i.model_dump(exclude=strip) for i in hf_items] == [i.model_dump(exclude=strip) for i in file_items]
        assert refs[0].meta == {"task_type": task}
        assert refs[0].source == f"hf:{name}/{task}[data]#0"


def test_hf_general_ids(saved: tuple[Path, Path]) -> None:
    refs = list(hf.hf_refs(str(saved[0]), "general", "data"))
    ids = [r.case_id for r in refs]
    assert ids[:3] == ["general-1", "general-2", "general-3"]
    assert ids[3] == "general-line4"  # blank ID
    assert ids[5] == "general-line6" and ids[6] == "general-line7"  # repeated ID
    item = to_item(hf.read_row(refs[0]), "general", refs[0].case_id, refs[0].source)
    assert item.label == "no" and item.hallucination_spans == []


def test_missing_task_in_local_dataset(tmp_path: Path) -> None:
    path = tmp_path / "only_qa"
    datasets.DatasetDict({"qa": datasets.Dataset.from_list([{"question": "q"}])}).save_to_disk(str(path))
    hf.load.cache_clear()
    with pytest.raises(CaseInputError, match=r"no 'dialogue' data \(expected a DatasetDict with a 'dialogue' key"):
        list(hf.hf_refs(str(path), "dialogue", "data"))
    ref = next(iter(hf.hf_refs(str(path), "qa", "data")))
    with pytest.raises(CaseInputError, match=r"hf:.*only_qa/qa\[data\]#0: field 'knowledge': missing"):
        to_item(hf.read_row(ref), "qa", ref.case_id, ref.source)


def test_not_a_saved_dataset(tmp_path: Path) -> None:
    (tmp_path / "junk").mkdir()
    hf.load.cache_clear()
    with pytest.raises(CaseInputError, match="not a dataset saved with save_to_disk"):
        list(hf.hf_refs(str(tmp_path / "junk"), "qa", "data"))
