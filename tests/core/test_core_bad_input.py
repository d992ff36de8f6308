"""Bad input never takes the run down and never vanishes: one clear item per problem."""

from __future__ import annotations

import json

import pytest
from core_helpers import jb, jb_suite, read_summary, suite_by_name, write_jsonl, write_suite

BOM = b"\xef\xbb\xbf"


def test_every_bad_line_is_one_error_naming_file_line_and_field(pytester: pytest.Pytester) -> None:
    good = lambda i: json.dumps(jb(True, True, case_id=f"ok-{i}")).encode()  # noqa: E731
    lines: list[bytes] = [
        BOM + good(1),  # 1: a BOM before the first record is not part of it
        b"not json at all",  # 2
        b"[1, 2, 3]",  # 3: JSON but not an object
        b"42",  # 4
        json.dumps({"id": "missing", "question": "q", "expected_outcome": True}).encode(),  # 5
        json.dumps(
            {"id": "types", "question": 3, "expected_outcome": "maybe", "actual_outcome": True}
        ).encode(),  # 6
        b"",  # 7: blank, skipped
        b"   \t",  # 8: whitespace only, skipped
        good(2),  # 9
        b'{"id": "latin1", "question": "caf\xe9", "expected_outcome": true, "actual_outcome": true}',  # 10
        json.dumps(jb(True, True, case_id="ok-1")).encode(),  # 11: duplicate of line 1
        b'{"id": "truncated", "question": ',  # 12
        json.dumps(
            jb(False, False, case_id="extra", source="kept?", notes={"x": 1})
        ).encode(),  # 13: extras ignored
        good(3),  # 14
    ]
    (pytester.path / "data").mkdir()
    # CRLF line endings throughout
    (pytester.path / "data" / "bad.jsonl").write_bytes(b"\r\n".join(lines) + b"\r\n")
    write_suite(
        pytester.path, "bad.eval.yaml", task="jailbreak_guardrails", input_path="data/bad.jsonl"
    )
    jb_suite(pytester.path, "other", [jb(False, False, case_id="fine")])

    result = pytester.runpytest("-v", "--evals-json", "s.json")

    result.assert_outcomes(passed=5, errors=8)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # errors and no gate tolerating them
    result.stdout.fnmatch_lines(
        [
            "bad.eval.yaml::ok-1 PASSED*",
            "bad.eval.yaml::line-2 ERROR*",
            "bad.eval.yaml::line-3 ERROR*",
            "bad.eval.yaml::line-4 ERROR*",
            "bad.eval.yaml::missing ERROR*",
            "bad.eval.yaml::types ERROR*",
            "bad.eval.yaml::ok-2 PASSED*",
            "bad.eval.yaml::line-10 ERROR*",
            "bad.eval.yaml::ok-1[[]dup-2[]] ERROR*",
            "bad.eval.yaml::line-12 ERROR*",
            "bad.eval.yaml::extra PASSED*",
            "bad.eval.yaml::ok-3 PASSED*",
            "other.eval.yaml::fine PASSED*",
        ]
    )
    out = result.stdout.str()
    for message in [
        "data/bad.jsonl:2: invalid JSON: Expecting value (column 1)",
        "data/bad.jsonl:3: a case must be a JSON object, got list",
        "data/bad.jsonl:4: a case must be a JSON object, got int",
        "data/bad.jsonl:5: field 'actual_outcome': Field required",
        "data/bad.jsonl:6: field 'question': Input should be a valid string; field 'expected_outcome': Input should be a valid boolean",
        "data/bad.jsonl:10: not valid UTF-8 (byte 0xe9 at column",
        "data/bad.jsonl:11: duplicate id 'ok-1' (first used at line 1)",
        "data/bad.jsonl:12: invalid JSON",
    ]:
        assert message in out, message
    suite = suite_by_name(read_summary(pytester.path / "s.json"), "bad")
    # Every non-blank line is counted: nothing vanished.
    assert suite["cases"]["total"] == 12
    assert suite["cases"]["errors"] == 8
    assert suite["cases"]["errors_by_kind"] == {"input": 8}
    assert suite["metrics"]["errors_input"]["value"] == 8
    # Only the scored cases enter the aggregates.
    assert suite["metrics"]["accuracy"]["n"] == 5 - 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "data/cases.jsonl: no cases (the file is empty or has only blank lines)"),
        (b"\n\r\n   \n", "data/cases.jsonl: no cases (the file is empty or has only blank lines)"),
        (BOM, "data/cases.jsonl: no cases (the file is empty or has only blank lines)"),
        (None, "data/cases.jsonl: input file not found"),
    ],
    ids=["empty", "blank-lines-only", "bom-only", "missing"],
)
def test_file_level_problems_are_one_error_naming_the_file(
    pytester: pytest.Pytester, content: bytes | None, message: str
) -> None:
    (pytester.path / "data").mkdir()
    if content is not None:
        (pytester.path / "data" / "cases.jsonl").write_bytes(content)
    write_suite(
        pytester.path, "s.eval.yaml", task="jailbreak_guardrails", input_path="data/cases.jsonl"
    )
    jb_suite(pytester.path, "other", [jb(True, True, case_id="a")])
    result = pytester.runpytest("--evals-json", "s.json")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["ERROR s.eval.yaml::suite-error*"])
    assert message in result.stdout.str()
    summary = read_summary(pytester.path / "s.json")
    assert suite_by_name(summary, "s")["passed"] is False
    assert suite_by_name(summary, "other")["passed"] is True
    assert summary["passed"] is False
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_input_path_problems(pytester: pytest.Pytester) -> None:
    (pytester.path / "data" / "adir.jsonl").mkdir(parents=True)
    write_suite(
        pytester.path, "dir.eval.yaml", task="jailbreak_guardrails", input_path="data/adir.jsonl"
    )
    write_suite(pytester.path, "none.eval.yaml", task="jailbreak_guardrails")
    result = pytester.runpytest()
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert "data/adir.jsonl: is a directory, expected a JSONL file" in out
    assert "field 'input_path' is required for task 'jailbreak_guardrails'" in out


def test_bom_and_crlf_cases_pass_with_their_ids(pytester: pytest.Pytester) -> None:
    rows = [
        json.dumps(jb(True, True, case_id="first")).encode(),
        json.dumps(jb(False, False, case_id="second")).encode(),
    ]
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "b.jsonl").write_bytes(BOM + rows[0] + b"\r\n" + rows[1] + b"\r\n")
    write_suite(
        pytester.path, "b.eval.yaml", task="jailbreak_guardrails", input_path="data/b.jsonl"
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["b.eval.yaml::first PASSED*", "b.eval.yaml::second PASSED*"])


def test_last_line_without_newline_is_a_case(pytester: pytest.Pytester) -> None:
    (pytester.path / "data").mkdir()
    body = json.dumps(jb(True, True, case_id="a")) + "\n" + json.dumps(jb(True, False, case_id="b"))
    (pytester.path / "data" / "n.jsonl").write_text(body)
    write_suite(
        pytester.path, "n.eval.yaml", task="jailbreak_guardrails", input_path="data/n.jsonl"
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1, failed=1)


def test_output_guardrails_and_router_validate_their_own_fields(pytester: pytest.Pytester) -> None:
    write_jsonl(
        pytester.path,
        "data/og.jsonl",
        [
            {"id": "ok", "expected_triggered": True, "actual_triggered": True},
            {"id": "nobool", "expected_triggered": "sometimes", "actual_triggered": True},
            {
                "id": "needs-actual-guardrails",
                "expected_triggered": True,
                "actual_triggered": True,
                "expected_guardrails": {"pii": True},
            },
        ],
    )
    write_suite(pytester.path, "og.eval.yaml", task="output_guardrails", input_path="data/og.jsonl")
    write_jsonl(
        pytester.path,
        "data/qr.jsonl",
        [
            {
                "id": "ok",
                "question": "hi",
                "expected_outcome": "greetings",
                "actual_outcome": "greetings",
            },
            {"id": "nolabel", "question": "hi", "expected_outcome": "greetings"},
        ],
    )
    write_suite(pytester.path, "qr.eval.yaml", task="question_router", input_path="data/qr.jsonl")
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, errors=3)
    out = result.stdout.str()
    assert "data/og.jsonl:2: field 'expected_triggered': Input should be a valid boolean" in out
    assert (
        "data/og.jsonl:3: field 'actual_guardrails' is required when 'expected_guardrails' is given"
        in out
    )
    assert "data/qr.jsonl:2: field 'actual_outcome': Field required" in out
