"""One reader of earlier runs: ``pytest-evals compare`` and ``--evals-baseline`` accept
the same forms of a run and read the same cases from them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from core_helpers import jb, write_jsonl, write_suite

from pytest_evals.output.run_reader import RunFileError, load_outcomes, read_run
from pytest_evals.regression.baseline_run import BaselineError, load_baseline


def record(case_id: str, status: str, **extra: Any) -> dict[str, Any]:
    # The core's field order: details before message (the reader skips details).
    return {
        "suite": "s/guard.eval.yaml", "task": "t", "case_id": case_id, "source": "x.jsonl:1", "index": 0,
        "status": status, "scores": {"correct": float(status == "passed")}, "data": {"lang": "en"},
        "details": {"errors": [{"message": "nested, not the case's"}], "prompt": 'say "message": no'},
        "message": None if status == "passed" else f"{case_id} went wrong",
        "error_kind": None, "usage": {}, "duration": 0.0, **extra,
    }


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_results_line_keeps_scores_data_and_message_without_its_details(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "r.jsonl", [record("c1", "passed"), record("c2", "failed")])
    cases = list(read_run(path))
    assert [(c.suite, c.case_id, c.status, c.message) for c in cases] == [
        ("s/guard.eval.yaml", "c1", "passed", None), ("s/guard.eval.yaml", "c2", "failed", "c2 went wrong")]
    assert cases[1].scores == {"correct": 0.0} and cases[1].data == {"lang": "en"}
    assert cases[1].where == f"{path}:2"
    # A record in another field order (message before details) is read whole, alike.
    moved = record("c3", "failed")
    moved = {"message": moved.pop("message"), **moved}
    write_lines(path, [moved])
    assert next(iter(read_run(path))).message == "c3 went wrong"


def _summary(path: Path, suites: list[dict[str, Any]], **top: Any) -> Path:
    path.write_text(json.dumps({"schema_version": 1, "suites": suites, **top}), encoding="utf-8")
    return path


def test_every_form_reads_the_same_cases_for_both_consumers(tmp_path: Path) -> None:
    recs = [record("c1", "passed"), record("c2", "failed")]
    run = write_lines(tmp_path / "runs" / "2024-01-01T00-00-00" / "results.jsonl", recs)
    rows = [{"case_id": r["case_id"], "status": r["status"], "scores": r["scores"], "data": r["data"],
             "message": r["message"]} for r in recs]
    forms = {
        "results.jsonl": run,
        "run folder": run.parent,
        "base folder": tmp_path / "runs",
        "summary with case_results": _summary(
            tmp_path / "cr.json", [{"suite": "s/guard.eval.yaml", "name": "guard", "case_results": rows}]),
        "summary pointing at its results": _summary(tmp_path / "rp.json", [], results_path=str(run)),
        "summary beside its results": _summary(run.parent / "summary.json", [{"suite": "s/guard.eval.yaml"}]),
    }
    for form, path in forms.items():
        outcomes = load_outcomes(path, group_by="lang")
        assert {k: (o.correct, o.group) for k, o in outcomes.items.items()} == {
            "c1": (True, "en"), "c2": (False, "en")}, form
        baseline = load_baseline(path)
        cases = baseline.suite("s/guard.eval.yaml", "guard")
        assert cases is not None, form
        assert {k: (c.status, c.message) for k, c in cases.items()} == {
            "c1": ("passed", None), "c2": ("failed", "c2 went wrong")}, form
        assert baseline.suite("moved/guard.eval.yaml", "guard") is cases  # paired by name
    # Per-suite statuses (older summaries): a verdict, no data.
    statuses = _summary(tmp_path / "st.json", [{"suite": "s/guard.eval.yaml", "case_status": {"c1": "failed"}}])
    assert load_outcomes(statuses).items["c1"].correct is False
    assert load_baseline(statuses).suites["s/guard.eval.yaml"]["c1"].status == "failed"


@pytest.mark.parametrize(("content", "message"), [
    ('{"suite": "s", "case_id": "a"}\nnot json\n', r"bad\.jsonl:2: not JSON"),
    ('{"suite": "s", "case_id": 1.5}\n', r"bad\.jsonl:1: a case needs a string 'case_id'"),
    ('{"suite": "s", "case_id": "a", "data": [1]}\n', r"bad\.jsonl:1: 'scores' and 'data' must be objects"),
])
def test_a_bad_file_is_named_by_both_consumers(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(RunFileError, match=message):
        load_outcomes(path)
    with pytest.raises(BaselineError, match=message):
        load_baseline(path)


def test_what_only_a_baseline_refuses(tmp_path: Path) -> None:
    twice = write_lines(tmp_path / "twice.jsonl", [record("c1", "passed"), record("c1", "failed")])
    assert load_outcomes(twice).items["c1"].correct is False  # compare: the last result wins
    with pytest.raises(BaselineError, match=r"twice\.jsonl:2: case id 'c1' appears twice"):
        load_baseline(twice)
    nosuite = write_lines(tmp_path / "nosuite.jsonl", [{"case_id": "c1", "status": "passed"}])
    assert load_outcomes(nosuite).items["c1"].correct is True
    with pytest.raises(BaselineError, match="needs string fields 'suite' and 'case_id'"):
        load_baseline(nosuite)
    with pytest.raises(BaselineError, match="no such file or folder"):
        load_baseline(tmp_path / "missing")
    with pytest.raises(BaselineError, match=r"no results\.jsonl in this folder"):
        load_baseline(tmp_path)


def test_compare_reads_a_real_runs_summary_and_folder_alike(pytester: pytest.Pytester) -> None:
    rows = [jb(i % 2 == 0, (i % 2 == 0) != (i % 5 == 0), case_id=f"c{i}") for i in range(20)]
    write_jsonl(pytester.path, "data/jb.jsonl", rows)
    write_suite(pytester.path, "jb.eval.yaml", task="jailbreak_guardrails", input_path="data/jb.jsonl")
    pytester.runpytest("--evals-json", "s.json", "--evals-report-dir", "runs", "-p", "no:cacheprovider")
    by_summary = load_outcomes(pytester.path / "s.json")
    by_folder = load_outcomes(pytester.path / "runs")
    assert by_summary.items == by_folder.items and len(by_folder.items) == 20
    assert by_folder.items["c5"].correct is False and by_folder.items["c2"].correct is True
    def cases(path: Path) -> dict[str, tuple[Any, ...]]:  # all but where each was read
        return {c.case_id: c[:6] for s in load_baseline(path).suites.values() for c in s.values()}

    assert len(cases(pytester.path / "s.json")) == 20
    assert cases(pytester.path / "s.json") == cases(pytester.path / "runs")
