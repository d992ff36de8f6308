"""``pytest-evals compare`` on any task's results: generic reader, grouping, no family import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scipy import stats as sps

from pytest_evals.cli.main import main
from pytest_evals.output.run_reader import RunFileError, load_outcomes, pair


def record(case_id: str, status: str, suite: str = "suites/guard.eval.yaml", **data: object) -> str:
    return json.dumps({
        "suite": suite, "task": "jailbreak_guardrails", "case_id": case_id, "source": "x.jsonl:1", "index": 0,
        "status": status, "scores": {}, "data": data,
        # a nested "details" key inside details, and quotes in text, must not confuse the reader
        "details": {"details": {"x": 1}, "prompt": 'say "details": no'}, "message": None,
        "error_kind": None, "usage": {}, "duration": 0.0,
    }) + "\n"


def test_compare_does_not_import_a_task_family() -> None:
    code = (
        "import sys, pytest_evals.cli.compare_runs\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('pytest_evals.families.halueval', 'pytest_evals.tasks.halueval', 'scipy.stats')))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_generic_results_pair_and_group_by_a_data_field(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text(
        record("c1", "passed", lang="en") + record("c2", "failed", lang="en") + record("c3", "passed", lang="pt")
        + record("c4", "error", lang="pt"), encoding="utf-8",
    )
    b.write_text(
        record("c1", "failed", lang="en") + record("c2", "passed", lang="en") + record("c3", "passed", lang="pt")
        + record("c4", "passed", lang="pt") + record("c5", "passed"), encoding="utf-8",
    )
    run_a, run_b = load_outcomes(a, group_by="lang"), load_outcomes(b, group_by="lang")
    pairs, unpaired = pair(run_a, run_b)
    assert [(p.case_id, p.a, p.b, p.group) for p in pairs] == [
        ("c1", True, False, "en"), ("c2", False, True, "en"), ("c3", True, True, "pt")]
    assert unpaired == {"only_in_a": 0, "only_in_b": 1, "without_verdict": 1}
    assert load_outcomes(a).items["c1"].group == ""  # no grouping asked for


def test_a_broken_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(record("c1", "passed") + "{not json\n", encoding="utf-8")
    with pytest.raises(RunFileError, match=r"r\.jsonl:2: not JSON"):
        load_outcomes(path)


@pytest.mark.parametrize("group_by", ["lang", "none"])
def test_compare_command_on_a_classification_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], group_by: str
) -> None:
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text("".join(record(f"c{i}", "passed" if i % 3 else "failed", lang="en" if i % 2 else "pt") for i in range(60)), encoding="utf-8")
    b.write_text("".join(record(f"c{i}", "passed" if i % 5 else "failed", lang="en" if i % 2 else "pt") for i in range(60)), encoding="utf-8")
    out = tmp_path / "cmp.json"
    assert main(["compare", str(a), str(b), "--group-by", group_by, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    data = json.loads(out.read_text(encoding="utf-8"))
    labels = list(data["comparisons"])
    assert labels == (["all", "en", "pt"] if group_by == "lang" else ["all"])
    assert ("\nen " in text) == (group_by == "lang")
    allc = data["comparisons"]["all"]
    b_count = sum(1 for i in range(60) if i % 3 and not i % 5)
    c_count = sum(1 for i in range(60) if not i % 3 and i % 5)
    assert (allc["only_a"], allc["only_b"], allc["n"]) == (b_count, c_count, 60)
    assert abs(allc["p_value"] - sps.binomtest(b_count, b_count + c_count).pvalue) <= 1e-12


def test_without_group_by_only_a_field_the_family_declares_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The core groups by nothing of its own: a task's family may declare the field."""
    from pytest_evals.registry.family_registry import registry

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(record(f"c{i}", "passed", lang="en" if i % 2 else "pt", task_type="x") for i in range(6)), encoding="utf-8")
    b.write_text("".join(record(f"c{i}", "failed", lang="en" if i % 2 else "pt", task_type="x") for i in range(6)), encoding="utf-8")
    out = tmp_path / "cmp.json"
    assert main(["compare", str(a), str(b), "--json", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert (data["group_by"], list(data["comparisons"])) == (None, ["all"])
    monkeypatch.setitem(registry().group_fields, "jailbreak_guardrails", "lang")
    assert main(["compare", str(a), str(b), "--json", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert (data["group_by"], list(data["comparisons"])) == ("lang", ["all", "en", "pt"])
    capsys.readouterr()


def test_compare_reads_two_evals_json_summaries(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 25: ``compare A.json B.json`` refused two --evals-json summaries ("no per-case
    results") though they carry ``case_results`` and --evals-baseline reads them."""
    import yaml

    def write(wrong: set[int]) -> None:
        rows = [{"id": f"c{i}", "question": f"q{i}", "expected_outcome": i % 2 == 0,
                 "actual_outcome": (i % 2 != 0) if i in wrong else (i % 2 == 0)} for i in range(30)]
        (pytester.path / "jb.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        (pytester.path / "jb.eval.yaml").write_text(
            yaml.safe_dump({"task": "jailbreak_guardrails", "input_path": "jb.jsonl"}), encoding="utf-8")

    write(set())
    pytester.runpytest("--evals-json", "a.json", "-p", "no:cacheprovider")
    write({0, 1, 2, 5})
    pytester.runpytest("--evals-json", "b.json", "-p", "no:cacheprovider")
    capsys.readouterr()
    out = pytester.path / "cmp.json"
    a, b = pytester.path / "a.json", pytester.path / "b.json"
    assert main(["compare", str(a), str(b), "--json", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    allc = data["comparisons"]["all"]
    assert (allc["n"], allc["only_a"], allc["only_b"]) == (30, 4, 0)
    assert data["a"]["suites"] == ["jb.eval.yaml"] and data["unpaired"] == {"only_in_a": 0, "only_in_b": 0,
                                                                            "without_verdict": 0}
    assert "acc A" in capsys.readouterr().out
