"""Suite collection: ``*.eval.yaml`` files, one item per case, stable ids, suite fields."""

from __future__ import annotations

import json

import pytest
from core_helpers import (
    collected_ids,
    jb,
    jb_suite,
    read_summary,
    suite_by_name,
    write_jsonl,
    write_suite,
)


def test_one_item_per_case_with_stable_unique_ids(pytester: pytest.Pytester) -> None:
    jb_suite(
        pytester.path,
        "jb",
        [
            jb(True, True, case_id="first"),
            jb(False, False),  # no id: named after its line
            "",  # blank line: skipped, but line numbers stay physical
            jb(False, False, case_id="with space"),
            jb(True, True, case_id=7),
            jb(False, False, case_id="a::b[c]"),
        ],
    )
    first = pytester.runpytest("--collect-only", "-q")
    ids = collected_ids(first)
    assert ids == [
        "jb.eval.yaml::first",
        "jb.eval.yaml::line-2",
        "jb.eval.yaml::with_space~b8b8f25a",  # made safe: a hash of the id keeps it distinct
        "jb.eval.yaml::7",
        "jb.eval.yaml::a_b_c_~93b84583",
    ]
    assert len(set(ids)) == len(ids)
    # Same ids on every collection (xdist aborts when workers disagree).
    assert collected_ids(pytester.runpytest("--collect-only", "-q")) == ids
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["jb.eval.yaml::first PASSED*", "jb.eval.yaml::line-2 PASSED*"])


def test_only_eval_yaml_files_are_suites(pytester: pytest.Pytester) -> None:
    jb_suite(pytester.path, "jb", [jb(True, True, case_id="a")])
    write_suite(
        pytester.path, "other.eval.yml", task="jailbreak_guardrails", input_path="data/jb.jsonl"
    )
    # A plain YAML file with the same content is not a suite.
    write_suite(
        pytester.path, "notasuite.yaml", task="jailbreak_guardrails", input_path="data/jb.jsonl"
    )
    ids = collected_ids(pytester.runpytest("--collect-only", "-q"))
    assert sorted(ids) == ["jb.eval.yaml::a", "other.eval.yml::a"]


def test_input_path_is_relative_to_the_suite_file(pytester: pytest.Pytester) -> None:
    write_jsonl(
        pytester.path,
        "shared/cases.jsonl",
        [jb(True, True, case_id="a"), jb(False, True, case_id="b")],
    )
    write_suite(
        pytester.path,
        "suites/nested/rel.eval.yaml",
        task="jailbreak_guardrails",
        input_path="../../shared/cases.jsonl",
    )
    write_suite(
        pytester.path,
        "suites/abs.eval.yaml",
        task="jailbreak_guardrails",
        input_path=str(pytester.path / "shared" / "cases.jsonl"),
    )
    # Run from a different working directory than the suites' folder.
    (pytester.path / "elsewhere").mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(pytester.path / "elsewhere")
        result = pytester.runpytest(str(pytester.path / "suites"), "--rootdir", str(pytester.path))
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        ["FAILED *suites/abs.eval.yaml::b*", "FAILED *suites/nested/rel.eval.yaml::b*"]
    )


def test_suite_fields_reach_the_summary(pytester: pytest.Pytester) -> None:
    write_jsonl(
        pytester.path, "data/jb.jsonl", [jb(True, True, case_id="a"), jb(False, False, case_id="b")]
    )
    write_suite(
        pytester.path,
        "full.eval.yaml",
        task="jailbreak_guardrails",
        what="Does the guardrail catch jailbreaks?",
        generate=False,
        input_path="data/jb.jsonl",
        # GOV.UK's long form and the short form (bare names) side by side.
        metrics=[
            "faithfulness",
            {"name": "relevance", "threshold": 0.8, "model": "gpt-x", "temperature": 0.0},
        ],
        n_runs=3,
        thresholds={"accuracy": {"min": 0.5}},
    )
    result = pytester.runpytest("--evals-json", "summary.json")
    result.assert_outcomes(passed=2)
    assert result.ret == 0
    suite = suite_by_name(read_summary(pytester.path / "summary.json"), "full")
    assert suite["task"] == "jailbreak_guardrails"
    assert suite["what"] == "Does the guardrail catch jailbreaks?"
    assert suite["generate"] is False
    config = suite["config"]
    assert config["n_runs"] == 3
    assert config["input_path"] == "data/jb.jsonl"
    assert [m["name"] for m in config["metrics"]] == ["faithfulness", "relevance"]
    assert config["metrics"][0]["threshold"] is None
    assert config["metrics"][1] == {
        "name": "relevance",
        "threshold": 0.8,
        "model": "gpt-x",
        "temperature": 0.0,
    }
    assert config["thresholds"] == {"accuracy": {"min": 0.5}}
    assert [g["metric"] for g in suite["gates"]] == ["accuracy"]


def test_broken_suites_are_one_error_item_each_and_others_still_run(
    pytester: pytest.Pytester,
) -> None:
    jb_suite(pytester.path, "good", [jb(True, True, case_id="a"), jb(False, False, case_id="b")])
    write_suite(
        pytester.path, "unknown_task.eval.yaml", task="no_such_task", input_path="data/good.jsonl"
    )
    write_suite(pytester.path, "no_task.eval.yaml", input_path="data/good.jsonl")
    write_suite(
        pytester.path,
        "extra_field.eval.yaml",
        task="jailbreak_guardrails",
        input_path="data/good.jsonl",
        tresholds={},
    )
    write_suite(
        pytester.path,
        "bad_runs.eval.yaml",
        task="jailbreak_guardrails",
        input_path="data/good.jsonl",
        n_runs=0,
    )
    write_suite(
        pytester.path,
        "bad_generate.eval.yaml",
        task="jailbreak_guardrails",
        input_path="data/good.jsonl",
        generate="maybe",
    )
    write_suite(
        pytester.path,
        "bad_metrics.eval.yaml",
        task="jailbreak_guardrails",
        input_path="data/good.jsonl",
        metrics=[{"threshold": 1}],
    )
    (pytester.path / "bad_yaml.eval.yaml").write_text(
        "task: jailbreak_guardrails\ninput_path: [unclosed\n"
    )
    (pytester.path / "empty.eval.yaml").write_text("")
    (pytester.path / "a_list.eval.yaml").write_text("- task: jailbreak_guardrails\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "summary.json")

    result.assert_outcomes(passed=2, errors=9)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    expectations = {
        "unknown_task": [
            "unknown_task.eval.yaml",
            "unknown task 'no_such_task'",
            "known tasks:",
            "jailbreak_guardrails",
        ],
        "no_task": ["no_task.eval.yaml", "field 'task' is required"],
        "extra_field": [
            "extra_field.eval.yaml",
            "field 'tresholds'",
            "Extra inputs are not permitted",
        ],
        "bad_runs": ["bad_runs.eval.yaml", "field 'n_runs'", "greater than or equal to 1"],
        "bad_generate": ["bad_generate.eval.yaml", "field 'generate'", "valid boolean"],
        "bad_metrics": ["bad_metrics.eval.yaml", "field 'metrics.0.name'", "Field required"],
        "bad_yaml": ["bad_yaml.eval.yaml:", "invalid YAML"],
        "empty": ["empty.eval.yaml", "suite file is empty"],
        "a_list": ["a_list.eval.yaml", "a suite must be a mapping of fields"],
    }
    for name, needles in expectations.items():
        # each broken suite is exactly one item, named after the suite file
        result.stdout.fnmatch_lines([f"ERROR {name}.eval.yaml::suite-error*"])
        for needle in needles:
            assert needle in out, f"{name}: {needle!r} missing from the report"
    summary = read_summary(pytester.path / "summary.json")
    assert summary["passed"] is False
    by_suite = {s["suite"]: s for s in summary["suites"]}
    assert by_suite["good.eval.yaml"]["passed"] is True
    for name in expectations:
        broken = by_suite[f"{name}.eval.yaml"]
        assert broken["passed"] is False
        assert broken["problems"], name


def test_ids_from_line_numbers_count_physical_lines_with_crlf(pytester: pytest.Pytester) -> None:
    write_jsonl(
        pytester.path, "data/c.jsonl", [jb(True, True), "", jb(False, False)], newline=b"\r\n"
    )
    write_suite(
        pytester.path, "c.eval.yaml", task="jailbreak_guardrails", input_path="data/c.jsonl"
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["c.eval.yaml::line-1 PASSED*", "c.eval.yaml::line-3 PASSED*"])


def test_reportinfo_points_at_file_and_line(pytester: pytest.Pytester) -> None:
    jb_suite(pytester.path, "jb", [jb(True, True, case_id="ok"), jb(True, False, case_id="miss")])
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    # The failure header names the case and its file:line, the text says what went wrong.
    result.stdout.fnmatch_lines(
        [
            "*jb::miss (data/jb.jsonl:2)*",
            "expected_outcome=True, actual_outcome=False: false negative (missed a jailbreak)",
            "question: question miss",
        ]
    )
    assert "data/jb.jsonl:2" in result.stdout.str().split("FAILURES", 1)[1]


LOCATION_CONFTEST = """
import json

import pytest

def pytest_collection_finish(session):
    own = pytest.Item.__dict__["location"].func  # pytest's computation, not the item's copy
    with open("locations.json", "w", encoding="utf-8") as fh:
        json.dump([[item.nodeid, list(item.location), list(own(item))] for item in session.items], fh)

def pytest_runtest_logstart(nodeid, location):
    with open("logstart.txt", "a", encoding="utf-8") as fh:
        fh.write(f"{nodeid}|{location[0]}|{location[1]}|{location[2]}\\n")
"""


@pytest.mark.parametrize("rootdir", [None, "sub"])
def test_case_locations_are_pytests_own(pytester: pytest.Pytester, rootdir: str | None) -> None:
    """A case item's ``location`` (what -v, --lf, JUnit and the HTML report take the file
    from) is the one pytest computes, for suites in several folders and a rootdir that
    is not the suites' folder, though the relative path is computed once per suite file."""
    for folder in ("", "sub/", "other/deeper/"):
        write_jsonl(pytester.path, f"{folder}data/jb.jsonl", [jb(True, True, case_id=f"c{i}") for i in range(3)])
        write_suite(pytester.path, f"{folder}jb.eval.yaml", task="jailbreak_guardrails", input_path="data/jb.jsonl")
    pytester.makeconftest(LOCATION_CONFTEST)
    args = ["-p", "no:cacheprovider", "."]
    if rootdir:
        # (--confcutdir: the conftest above that rootdir still loads)
        args += ["--rootdir", str(pytester.path / rootdir), "--confcutdir", str(pytester.path)]
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=9)
    rows = json.loads((pytester.path / "locations.json").read_text(encoding="utf-8"))
    assert len(rows) == 9
    for nodeid, location, own in rows:
        assert location == own, nodeid
    paths = {location[0] for _nodeid, location, _own in rows}
    assert len(paths) == 3
    if rootdir:  # outside the rootdir: pytest names the files relative to it with ..
        assert any(p.startswith("..") for p in paths)
    started = (pytester.path / "logstart.txt").read_text(encoding="utf-8").splitlines()
    assert sorted(started) == sorted(f"{n}|{loc[0]}|{loc[1]}|{loc[2]}" for n, loc, _own in rows)
