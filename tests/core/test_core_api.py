"""The Python API: ``pytest_evals.cases`` parametrizes a user's test with JSONL cases."""

from __future__ import annotations

import pytest
from core_helpers import esc, jb, write_jsonl

API_TESTS = """
import pytest
from pydantic import BaseModel

import pytest_evals
from pytest_evals.collection.cases_marker import cases


class Question(BaseModel):
    question: str


@pytest.fixture
def prefix():
    return "Q: "


@cases("data/cases.jsonl")
def test_dict(case, prefix, request):
    # fixtures work alongside the case
    assert prefix == "Q: "
    assert isinstance(case, dict)
    assert case["question"].startswith("question")


@cases("data/cases.jsonl", model=Question)
def test_model(case):
    assert isinstance(case, Question)


@pytest_evals.cases("data/cases.jsonl", task="jailbreak_guardrails")
def test_task(case):
    assert type(case).__name__ == "JailbreakCase"
    assert case.expected_outcome == case.actual_outcome
"""


def test_cases_is_the_public_api() -> None:
    import pytest_evals
    from pytest_evals.collection import cases_marker as api

    assert pytest_evals.cases is api.cases
    assert "cases" in pytest_evals.__all__


def test_one_test_per_line_with_ids_and_fixtures(pytester: pytest.Pytester) -> None:
    write_jsonl(
        pytester.path,
        "data/cases.jsonl",
        [
            jb(True, True, case_id="first"),
            "",
            jb(False, False),
            jb(True, True, case_id="with space"),
        ],
    )
    pytester.makepyfile(test_api=API_TESTS)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=9)
    result.stdout.fnmatch_lines(
        [
            esc("test_api.py::test_dict[first] PASSED*"),
            esc("test_api.py::test_dict[line-3] PASSED*"),
            esc("test_api.py::test_dict[with_space~b8b8f25a] PASSED*"),
            esc("test_api.py::test_model[first] PASSED*"),
            esc("test_api.py::test_task[with_space~b8b8f25a] PASSED*"),
        ]
    )


def test_bad_lines_error_at_setup_naming_file_and_line(pytester: pytest.Pytester) -> None:
    write_jsonl(
        pytester.path,
        "data/cases.jsonl",
        [
            jb(True, True, case_id="ok"),
            "{not json",
            {"id": "wrongtype", "question": 5, "expected_outcome": True, "actual_outcome": True},
            "[1]",
        ],
    )
    pytester.makepyfile(test_api=API_TESTS)
    result = pytester.runpytest("-v")
    # the good line passes in all three tests; each bad line is one ERROR per test, except
    # that plain dicts are not validated, so the wrongly typed line reaches test_dict
    result.assert_outcomes(passed=3, failed=1, errors=3 + 2 + 3)
    result.stdout.fnmatch_lines(
        [
            esc("*test_dict[line-2] ERROR*"),
            esc("*test_dict[wrongtype] FAILED*"),
            esc("*test_dict[line-4] ERROR*"),
            esc("*test_model[wrongtype] ERROR*"),
            esc("*test_task[wrongtype] ERROR*"),
        ]
    )
    out = result.stdout.str()
    assert "ERROR at setup of test_dict[line-2]" in out
    assert "data/cases.jsonl:2: invalid JSON" in out
    assert "data/cases.jsonl:3: field 'question': Input should be a valid string" in out
    assert "data/cases.jsonl:4: a case must be a JSON object, got list" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "data/cases.jsonl: input file not found"), (b"\n\n", "data/cases.jsonl: no cases")],
    ids=["missing", "empty"],
)
def test_missing_or_empty_file_is_one_erroring_test(
    pytester: pytest.Pytester, content: bytes | None, message: str
) -> None:
    if content is not None:
        (pytester.path / "data").mkdir()
        (pytester.path / "data" / "cases.jsonl").write_bytes(content)
    pytester.makepyfile(
        test_api="""
        from pytest_evals.collection.cases_marker import cases

        @cases("data/cases.jsonl")
        def test_case(case):
            pass

        def test_other():
            pass
        """
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([esc("*test_case[input-error] ERROR*")])
    assert message in result.stdout.str()


def test_path_is_relative_to_the_test_file_and_options(pytester: pytest.Pytester) -> None:
    write_jsonl(
        pytester.path, "sub/cases.jsonl", [{"key": "k1", "text": "a"}, {"key": "k2", "text": "b"}]
    )
    (pytester.path / "sub" / "test_sub.py").write_text(
        "from pytest_evals.collection.cases_marker import cases\n\n"
        "@cases('cases.jsonl', argname='row', id_field='key')\n"
        "def test_row(row):\n"
        "    assert row['text'] in ('a', 'b')\n"
    )
    result = pytester.runpytest("-v", "sub")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [esc("sub/test_sub.py::test_row[k1] PASSED*"), esc("sub/test_sub.py::test_row[k2] PASSED*")]
    )


def test_unknown_task_errors_naming_the_task(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path, "data/cases.jsonl", [jb(True, True, case_id="a")])
    pytester.makepyfile(
        test_api="""
        from pytest_evals.collection.cases_marker import cases

        @cases("data/cases.jsonl", task="no_such_task")
        def test_case(case):
            pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    assert "unknown task 'no_such_task'" in result.stdout.str()


def test_cases_under_xdist_keep_ids(pytester: pytest.Pytester) -> None:
    write_jsonl(
        pytester.path, "data/cases.jsonl", [jb(True, True, case_id=f"c{i}") for i in range(6)]
    )
    pytester.makepyfile(test_api=API_TESTS)
    result = pytester.runpytest_subprocess("-n", "2", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=18)
    result.stdout.fnmatch_lines([esc("*PASSED*test_api.py::test_task[c5]*")])


def test_duplicate_ids_are_reported(pytester: pytest.Pytester) -> None:
    write_jsonl(
        pytester.path,
        "data/cases.jsonl",
        [jb(True, True, case_id="a"), jb(False, False, case_id="a")],
    )
    pytester.makepyfile(test_api=API_TESTS)
    result = pytester.runpytest("-v", "-k", "test_dict")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([esc("*test_dict[a[dup-2]] ERROR*")])
    assert "data/cases.jsonl:2: duplicate id 'a' (first used at line 1)" in result.stdout.str()


def test_model_must_be_a_pydantic_model(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path, "data/cases.jsonl", [jb(True, True, case_id="a")])
    pytester.makepyfile(
        test_api="""
        from pytest_evals.collection.cases_marker import cases

        @cases("data/cases.jsonl", model=dict)
        def test_case(case):
            pass
        """
    )
    result = pytester.runpytest()
    # the decorator itself refuses: a collection error of that test file, not N setup errors
    result.assert_outcomes(errors=1)
    assert "AttributeError" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*TypeError: pytest_evals.cases(model=...): expected a pydantic model class, got <class 'dict'>"
        ]
    )
