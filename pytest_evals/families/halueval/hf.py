"""HaluEval from a Hugging Face ``datasets`` dataset instead of the official files.

``hf_dataset`` is either a Hub name with one configuration per task (for example the
community copy ``pminervini/HaluEval``, split ``data``) loaded with
``datasets.load_dataset(name, task, split=...)``, or a local directory written by
``save_to_disk``: a ``DatasetDict`` keyed by task name, or one sub-directory per task
holding a ``Dataset`` (or a ``DatasetDict`` with the split). Rows map to the same
items as the file lines (same field names); row ``i`` gets the id of line ``i + 1``
so runs on the files and on a faithful copy pair up.

Datasets are Arrow memory maps: refs keep (task, row) only and rows are read when a
case runs. Loaded datasets are cached per process.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from pytest_evals.families.halueval.index import GENERAL_PREFIX, case_ids
from pytest_evals.model.errors import CaseInputError
from pytest_evals.suites.jsonl_cases import safe_id
from pytest_evals.tasks.task_contract import CaseRef


def _import_datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise CaseInputError(
            "hf_dataset needs the `datasets` package: pip install 'pytest-evals[hf]'"
        ) from None
    return datasets


def _pick_split(obj: Any, split: str, where: str) -> Any:
    """A Dataset from a Dataset or DatasetDict (the named split, or its only split)."""
    datasets = _import_datasets()
    if isinstance(obj, datasets.DatasetDict):
        if split in obj:
            return obj[split]
        if len(obj) == 1:
            return next(iter(obj.values()))
        raise CaseInputError(f"{where}: no split {split!r}; splits: {', '.join(obj)}")
    return obj


@lru_cache(maxsize=32)
def load(name: str, task: str, split: str) -> Any:
    """The dataset of one task (``name`` is a local save_to_disk directory or a Hub name)."""
    datasets = _import_datasets()
    local = Path(name).expanduser()
    if local.exists():
        where = f"hf_dataset {local}"
        if (local / task).is_dir():
            return _pick_split(datasets.load_from_disk(str(local / task)), split, f"{where}/{task}")
        try:
            obj = datasets.load_from_disk(str(local))
        except (FileNotFoundError, ValueError) as exc:
            raise CaseInputError(f"{where}: not a dataset saved with save_to_disk ({exc})") from None
        if isinstance(obj, datasets.DatasetDict) and task in obj:
            return obj[task]
        raise CaseInputError(
            f"{where}: no {task!r} data (expected a DatasetDict with a {task!r} key "
            f"or a {task}/ sub-directory saved with save_to_disk)"
        )
    try:
        return datasets.load_dataset(name, task, split=split)
    except Exception as exc:  # datasets raises many types (network, missing config)
        raise CaseInputError(
            f"hf_dataset {name!r}, configuration {task!r}, split {split!r}: cannot be loaded: {exc}"
        ) from None


def hf_refs(name: str, task: str, split: str) -> Iterator[CaseRef]:
    ds = load(name, task, split)
    n = len(ds)
    if n == 0:
        raise CaseInputError(f"hf_dataset {name!r}: the {task!r} data has no rows")
    ids: list[str | None] = [None] * n
    if task == "general" and "ID" in ds.column_names:
        ids = [safe_id(v) if v is not None and str(v).strip() else None for v in ds["ID"]]
    case_id_list = case_ids(task, GENERAL_PREFIX["current"], [(row + 1, ids[row]) for row in range(n)])
    for row, case_id in enumerate(case_id_list):
        yield CaseRef(
            case_id=case_id,
            source=f"hf:{name}/{task}[{split}]#{row}",
            line=row + 1,
            locator=("hf", name, task, split, row),
            meta={"task_type": task},
        )


def read_row(ref: CaseRef) -> dict[str, Any]:
    _, name, task, split, row = ref.locator
    record: dict[str, Any] = load(name, task, split)[row]
    return record
