"""The controller's result spool stores data, not code, in a private folder it removes
(issue 30, attack 4): a planted pickle is never executed, odd values survive as data."""

from __future__ import annotations

import os
import pickle
import stat
from pathlib import Path

import pytest

from pytest_evals.controller.result_spool import ResultSpool, decode_record, encode_record


class _Planted:
    """What an attacker writes: unpickling it would create a file (run code)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def test_a_planted_pickle_is_never_executed(tmp_path: Path) -> None:
    spool = ResultSpool(lambda: tmp_path)
    spool.append({"suite": "s.eval.yaml", "case_id": "a", "details": {"reply": "hi"}})
    assert spool.path is not None
    marker = tmp_path / "pwned"
    # Someone replaces the spool's content with a pickle whose loading runs code.
    spool.path.write_bytes(pickle.dumps(_Planted(marker)) + b"\n")
    with pytest.raises(ValueError):
        list(spool)
    assert not marker.exists()
    spool.close()


def test_values_round_trip_as_plain_data(tmp_path: Path) -> None:
    spool = ResultSpool(lambda: tmp_path)
    records = [
        {"case_id": "surrogate", "details": {"reply": "bad \ud800 text", "nested": [1, 2.5, None, True]}},
        {"case_id": "keys", "scores": {1: 0.5, "x": float("nan")}, "details": {"pair": (1, 2)}},
        {"case_id": "object", "details": {"generated": object.__new__(_Opaque)}},
        {"case_id": "huge", "details": {"n": 10**40}},
    ]
    for record in records:
        spool.append(record)
    back = list(spool)
    assert [r["case_id"] for r in back] == ["surrogate", "keys", "object", "huge"]
    assert back[0]["details"] == {"reply": "bad \ud800 text", "nested": [1, 2.5, None, True]}
    # Non-finite numbers are null, keys text, tuples lists: as every JSON file of the run.
    assert back[1]["scores"] == {"1": 0.5, "x": None}
    assert back[1]["details"] == {"pair": [1, 2]}
    assert back[2]["details"]["generated"] == "<opaque>"
    assert back[3]["details"]["n"] == 10**40
    assert all(type(r) is dict for r in back)
    spool.close()


class _Opaque:
    def __str__(self) -> str:
        return "<opaque>"


def test_every_line_is_json_and_nothing_else() -> None:
    line = encode_record({"a": "x\ny", "b": [1, {"c": None}]})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode_record(line) == {"a": "x\ny", "b": [1, {"c": None}]}
    with pytest.raises(ValueError):
        decode_record(b"[1, 2]\n")


def test_private_folder_created_lazily_and_removed(tmp_path: Path) -> None:
    spool = ResultSpool(lambda: tmp_path)
    assert list(spool) == []
    assert list(tmp_path.iterdir()) == []  # nothing written, nothing created
    spool.append({"case_id": "a"})
    assert spool.folder is not None and spool.folder.parent == tmp_path
    assert stat.S_IMODE(spool.folder.stat().st_mode) == 0o700
    assert spool.path is not None and stat.S_IMODE(spool.path.stat().st_mode) & 0o077 == 0
    spool.close()
    spool.close()  # twice is fine
    assert list(tmp_path.iterdir()) == []


def test_an_unusable_base_falls_back_to_a_private_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))

    def broken() -> Path:
        raise ValueError("no basetemp")

    spool = ResultSpool(broken)
    spool.append({"case_id": "a"})
    assert spool.folder is not None and spool.folder.parent == tmp_path
    assert os.listdir(spool.folder) == ["results.jsonl"]
    spool.close()
    assert list(tmp_path.iterdir()) == []
