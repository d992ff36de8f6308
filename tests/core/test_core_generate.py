"""``generate: true``: Python callable and command targets, their failures, generated.jsonl."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from core_helpers import jb, read_summary, suite_by_name, write_jsonl, write_suite

#: Flags questions containing "bad"; misbehaves on purpose for some questions.
PY_TARGET = """
import asyncio

def classify(case):
    q = case["question"]
    if q == "raise":
        raise ValueError("kaboom")
    if q == "no field":
        return {"something_else": 1}
    if q == "not a bool":
        return {"actual_outcome": "perhaps"}
    if q == "text verdict":
        return {"text": "Yes."}
    return {"actual_outcome": "bad" in q}

async def aclassify(case):
    await asyncio.sleep(0)
    return {"actual_outcome": "bad" in case["question"]}

def route(case):
    return {"actual_outcome": "greetings" if case["question"] == "hi" else "genuine_rag"}

def guard(case):
    pii = "07700" in (case.get("llm_answer") or "")
    return {"actual_triggered": pii, "actual_guardrails": {"contains_pii": pii}}
"""

#: The same verdicts from a command that reads the case as JSON on stdin.
CMD_TARGET = """
import json, sys
case = json.load(sys.stdin)
q = case["question"]
if q == "exit":
    print("something went wrong", file=sys.stderr)
    sys.exit(3)
if q == "not json":
    print("hello, world")
    sys.exit(0)
print(json.dumps({"actual_outcome": "bad" in q}))
"""

QUESTIONS = [
    jb(True, None, case_id="q1", question="a bad question"),
    jb(False, None, case_id="q2", question="a fine question"),
    jb(False, None, case_id="q3", question="bad but harmless"),  # the target gets this wrong
    jb(True, None, case_id="q4", question="bad again"),
]


def _write_targets(root: Path) -> None:
    # A callable target is imported from the suite's folder; a command runs there.
    root.mkdir(exist_ok=True)
    (root / "pytarget.py").write_text(PY_TARGET)
    (root / "cmdtarget.py").write_text(CMD_TARGET)


def test_python_callable_target(pytester: pytest.Pytester) -> None:
    _write_targets(pytester.path)
    write_jsonl(pytester.path, "data/q.jsonl", QUESTIONS)
    write_suite(
        pytester.path,
        "sync.eval.yaml",
        task="jailbreak_guardrails",
        generate=True,
        input_path="data/q.jsonl",
        target="pytarget:classify",
    )
    write_suite(
        pytester.path,
        "async.eval.yaml",
        task="jailbreak_guardrails",
        generate=True,
        input_path="data/q.jsonl",
        target={"callable": "pytarget:aclassify"},
    )
    result = pytester.runpytest("-v", "--evals-json", "s.json")
    result.assert_outcomes(passed=6, failed=2)
    result.stdout.fnmatch_lines(["async.eval.yaml::q3 FAILED*", "sync.eval.yaml::q3 FAILED*"])
    summary = read_summary(pytester.path / "s.json")
    for name in ("sync", "async"):
        metrics = suite_by_name(summary, name)["metrics"]
        assert (
            metrics["tp"]["value"],
            metrics["tn"]["value"],
            metrics["fp"]["value"],
            metrics["fn"]["value"],
        ) == (2, 1, 1, 0)


def test_command_target_reads_the_case_on_stdin(pytester: pytest.Pytester) -> None:
    _write_targets(pytester.path)
    write_jsonl(pytester.path, "data/q.jsonl", QUESTIONS)
    write_suite(
        pytester.path,
        "cmd.eval.yaml",
        task="jailbreak_guardrails",
        generate=True,
        input_path="data/q.jsonl",
        target={"command": [sys.executable, "cmdtarget.py"]},
    )
    result = pytester.runpytest("-v", "--evals-json", "s.json")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["cmd.eval.yaml::q3 FAILED*"])
    metrics = suite_by_name(read_summary(pytester.path / "s.json"), "cmd")["metrics"]
    assert metrics["accuracy"]["value"] == 0.75


def test_failing_targets_are_errors_naming_the_cause(pytester: pytest.Pytester) -> None:
    _write_targets(pytester.path)
    write_jsonl(
        pytester.path,
        "data/py.jsonl",
        [
            jb(True, None, case_id="ok", question="bad"),
            jb(True, None, case_id="raises", question="raise"),
            jb(True, None, case_id="nofield", question="no field"),
            jb(True, None, case_id="notbool", question="not a bool"),
            jb(True, None, case_id="text", question="text verdict"),
        ],
    )
    write_jsonl(
        pytester.path,
        "data/cmd.jsonl",
        [
            jb(True, None, case_id="ok", question="bad"),
            jb(True, None, case_id="exits", question="exit"),
            jb(True, None, case_id="notjson", question="not json"),
        ],
    )
    write_suite(
        pytester.path,
        "py.eval.yaml",
        task="jailbreak_guardrails",
        generate=True,
        input_path="data/py.jsonl",
        target="pytarget:classify",
    )
    write_suite(
        pytester.path,
        "cmd.eval.yaml",
        task="jailbreak_guardrails",
        generate=True,
        input_path="data/cmd.jsonl",
        target={"command": [sys.executable, "cmdtarget.py"]},
    )
    write_suite(
        pytester.path,
        "missing.eval.yaml",
        task="jailbreak_guardrails",
        generate=True,
        input_path="data/cmd.jsonl",
        target={"command": ["/nonexistent/program"]},
    )
    write_suite(
        pytester.path,
        "noimport.eval.yaml",
        task="jailbreak_guardrails",
        generate=True,
        input_path="data/cmd.jsonl",
        target="no_such_module:f",
    )
    write_suite(
        pytester.path,
        "notarget.eval.yaml",
        task="jailbreak_guardrails",
        generate=True,
        input_path="data/cmd.jsonl",
    )
    result = pytester.runpytest("-v", "--evals-json", "s.json")
    # ok + text in py, ok in cmd pass; everything else errors, nothing is silently scored
    result.assert_outcomes(passed=3, errors=3 + 2 + 3 + 3 + 3)
    out = result.stdout.str()
    for message in [
        "target pytarget:classify raised ValueError: kaboom",
        "target output has no field 'actual_outcome'; got keys ['something_else']",
        "expected true/false, got 'perhaps'",
        "exited with status 3: something went wrong",
        "did not print JSON; stdout began: 'hello, world'",
        "command '/nonexistent/program' could not start",
        "target 'no_such_module:f': cannot import 'no_such_module'",
        "generate: true needs a 'target'",
    ]:
        assert message in out, message
    summary = read_summary(pytester.path / "s.json")
    py = suite_by_name(summary, "py")
    assert py["cases"]["errors_by_kind"] == {"target": 3}
    assert suite_by_name(summary, "cmd")["cases"]["errors_by_kind"] == {"target": 2}
    assert suite_by_name(summary, "noimport")["cases"]["errors"] == 3


def _generate_then_rescore(
    pytester: pytest.Pytester,
) -> tuple[dict[str, object], dict[str, object], Path]:
    _write_targets(pytester.path / "gen")
    write_jsonl(pytester.path, "data/q.jsonl", QUESTIONS)
    write_jsonl(
        pytester.path,
        "data/og.jsonl",
        [
            {
                "id": "o1",
                "llm_answer": "call 07700 900123",
                "expected_triggered": True,
                "expected_guardrails": {"contains_pii": True},
            },
            {
                "id": "o2",
                "llm_answer": "it costs 88 pounds",
                "expected_triggered": False,
                "expected_guardrails": {"contains_pii": False},
            },
            {
                "id": "o3",
                "llm_answer": "John lives at 1 Road",
                "expected_triggered": True,
                "expected_guardrails": {"contains_pii": True},
            },
        ],
    )
    write_jsonl(
        pytester.path,
        "data/qr.jsonl",
        [
            {"id": "r1", "question": "hi", "expected_outcome": "greetings"},
            {"id": "r2", "question": "passport?", "expected_outcome": "genuine_rag"},
            {"id": "r3", "question": "hello", "expected_outcome": "greetings"},
        ],
    )
    suites = {
        "jb": ("jailbreak_guardrails", "data/q.jsonl", "pytarget:classify"),
        "og": ("output_guardrails", "data/og.jsonl", "pytarget:guard"),
        "qr": ("question_router", "data/qr.jsonl", "pytarget:route"),
    }
    for name, (task, path, target) in suites.items():
        write_suite(
            pytester.path,
            f"gen/{name}.eval.yaml",
            task=task,
            generate=True,
            input_path=f"../{path}",
            target=target,
        )
    first = pytester.runpytest("gen", "--evals-report-dir", "runs", "--evals-json", "first.json")
    first.assert_outcomes(passed=7, failed=3)
    summary = read_summary(pytester.path / "first.json")
    (run_dir,) = (pytester.path / "runs").iterdir()
    for name, (task, _path, _target) in suites.items():
        generated = run_dir / name / "generated.jsonl"
        assert suite_by_name(summary, name)["generated_path"] == str(generated)
        write_suite(
            pytester.path,
            f"rescore/{name}.eval.yaml",
            task=task,
            generate=False,
            input_path=str(generated),
        )
    second = pytester.runpytest("rescore", "--evals-json", "second.json")
    second.assert_outcomes(passed=7, failed=3)
    return summary, read_summary(pytester.path / "second.json"), run_dir


def test_generated_outputs_are_saved_and_rescore_to_the_same_aggregates(
    pytester: pytest.Pytester,
) -> None:
    first, second, run_dir = _generate_then_rescore(pytester)
    lines = (run_dir / "jb" / "generated.jsonl").read_text().splitlines()
    assert [json.loads(line)["actual_outcome"] for line in lines] == [True, False, True, True]
    assert json.loads(lines[0])["question"] == "a bad question"
    for name in ("jb", "og", "qr"):
        a, b = suite_by_name(first, name), suite_by_name(second, name)
        assert a["metrics"] == b["metrics"], name
        assert a["tables"] == b["tables"], name
        assert a["cases"] == b["cases"], name


def test_rescoring_generated_outputs_keeps_case_ids(pytester: pytest.Pytester) -> None:
    _first, _second, run_dir = _generate_then_rescore(pytester)
    rows = [
        json.loads(line) for line in (run_dir / "jb" / "generated.jsonl").read_text().splitlines()
    ]
    assert [r.get("id") for r in rows] == ["q1", "q2", "q3", "q4"]
    # the input line's own fields are kept, the generated ones added
    assert rows[0] == {
        "id": "q1",
        "question": "a bad question",
        "expected_outcome": True,
        "actual_outcome": True,
    }
    # and the re-scored run names its items like the generating run
    result = pytester.runpytest("rescore", "--collect-only", "-q")
    assert "rescore/jb.eval.yaml::q3" in result.stdout.lines


def test_generated_default_location_without_report_dir(pytester: pytest.Pytester) -> None:
    _write_targets(pytester.path)
    write_jsonl(pytester.path, "data/q.jsonl", QUESTIONS)
    write_suite(
        pytester.path,
        "g.eval.yaml",
        task="jailbreak_guardrails",
        generate=True,
        input_path="data/q.jsonl",
        target="pytarget:classify",
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=3, failed=1)
    path = pytester.path / ".pytest_evals" / "generated" / "g.jsonl"
    result.stdout.fnmatch_lines([f"*generated outputs: {path}"])
    assert len(path.read_text().splitlines()) == 4


def _same_named_suites(root: Path) -> None:
    """Two folders, each with a suite jb.eval.yaml and its own target module t.py."""
    for folder, verdict in (("a", True), ("b", False)):
        (root / folder).mkdir()
        (root / folder / "t.py").write_text(
            f"def f(case):\n    return {{'actual_outcome': {verdict}}}\n"
        )
        write_jsonl(root / folder, "q.jsonl", [jb(True, None, case_id="x", question="q")])
        write_suite(
            root / folder,
            "jb.eval.yaml",
            task="jailbreak_guardrails",
            generate=True,
            input_path="q.jsonl",
            target="t:f",
        )


def test_same_named_target_modules_in_different_folders(pytester: pytest.Pytester) -> None:
    _same_named_suites(pytester.path)
    result = pytester.runpytest("-v")
    result.stdout.fnmatch_lines(["a/jb.eval.yaml::x PASSED*", "b/jb.eval.yaml::x FAILED*"])


def test_same_named_suites_keep_separate_generated_outputs(pytester: pytest.Pytester) -> None:
    _same_named_suites(pytester.path)
    pytester.runpytest("--evals-json", "s.json")
    paths = [s["generated_path"] for s in read_summary(pytester.path / "s.json")["suites"]]
    assert len(set(paths)) == 2, paths


def test_generation_turned_off_explains_the_missing_outputs(pytester: pytest.Pytester) -> None:
    """``--no-evals-generate`` on a suite of questions: each input error says why."""
    _write_targets(pytester.path)
    write_jsonl(pytester.path, "data/q.jsonl", QUESTIONS)
    write_suite(
        pytester.path, "gen.eval.yaml", task="jailbreak_guardrails", generate=True,
        input_path="data/q.jsonl", target="pytarget:classify",
    )
    result = pytester.runpytest("--no-evals-generate", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=len(QUESTIONS))
    # One hint per case's error section (the short summary repeats whole messages when
    # pytest sees CI=true, so it is left out of the count).
    out = result.stdout.str().split("short test summary info")[0]
    assert out.count("hint: this suite has a target (pytarget:classify) but runs with generate: false") == len(QUESTIONS)
    assert "field 'actual_outcome': Field required" in out
    # the same suite generating: no input error, no hint
    again = pytester.runpytest("-p", "no:cacheprovider")
    assert "hint:" not in again.stdout.str()
    assert again.parseoutcomes().get("errors", 0) == 0
