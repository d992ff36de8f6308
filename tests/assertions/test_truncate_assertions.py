"""``truncate:`` in an assertions suite: a judged assertion's prompt longer than the
model's context is sent with the case's input cut (``longest``, never the judged
output), not sent (``skip``: the case is skipped), or sent and refused (``none``)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_evals.llm.truncation import LEARNED

from .conftest import JudgeServer, read_json, suite_summary, write_suite

CASES = [
    {"id": "short", "question": "Is the sky blue?", "output": "Yes, on a clear day."},
    {"id": "long", "question": "Summarise: " + "very long document text " * 400, "output": "A polite summary."},
]
RUBRIC = [{"type": "llm_rubric", "criteria": "The answer is polite."}]
MARKER = "characters cut to fit the model's context"


@pytest.fixture(autouse=True)
def _forget_learned_limits() -> None:
    LEARNED._limits.clear()


def _run(pytester: pytest.Pytester, server: JudgeServer, policy: str, *extra: str) -> tuple[Any, dict[str, Any]]:
    server.server.configure(max_context=1500)
    write_suite(pytester.path, CASES, asserts=RUBRIC, truncate=policy)
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json", *extra)
    return result, suite_summary(read_json(pytester.path / "s.json"))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_longest_cuts_the_input_never_the_output(
    pytester: pytest.Pytester, judge_server: JudgeServer, workers: list[str]
) -> None:
    result, suite = _run(pytester, judge_server, "longest", *workers)
    statuses = {r["case_id"]: r["status"] for r in suite["case_results"]}
    assert statuses == {"short": "passed", "long": "passed"}, result.stdout.str()[-2000:]
    fitted = [m for m in judge_server.prompts() if MARKER in m]
    assert len(fitted) == 1
    assert "A polite summary." in fitted[0] and "Summarise: very long" in fitted[0]
    assert all(len(m) < 1500 * 4 for m in judge_server.prompts())
    assert judge_server.server.stats()["outcomes"].get("context_length", 0) <= 1


def test_longest_is_recorded_in_the_assertions_evidence(
    pytester: pytest.Pytester, judge_server: JudgeServer
) -> None:
    judge_server.server.configure(max_context=1500)
    write_suite(pytester.path, CASES, asserts=RUBRIC, truncate="longest", context_tokens=1500)
    reprec = pytester.inline_run("-p", "no:cacheprovider")
    results = {c.result.case_id: c.result for c in reprec.getcalls("pytest_evals_case_result")}
    evidence = results["long"].details["assertions"][0]["evidence"]
    record = evidence["truncation"]
    assert record["policy"] == "longest" and record["field"] == "input"
    assert record["context_limit"] == 1500 and record["kept_chars"] < record["original_chars"]
    assert "truncation" not in results["short"].details["assertions"][0]["evidence"]
    # The limit was given: fitted before it was sent, never refused.
    assert judge_server.server.stats()["outcomes"].get("context_length", 0) == 0


def test_skip_records_the_case_as_skipped(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    judge_server.server.configure(max_context=1500)
    write_suite(pytester.path, CASES, asserts=RUBRIC, truncate="skip", context_tokens=1500)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*assertion 'llm_rubric' (llm_rubric) judge prompt not sent (truncate: skip)*"])
    assert not any("very long document" in m for m in judge_server.prompts())


def test_none_stays_a_context_length_error(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    _result, suite = _run(pytester, judge_server, "none")
    statuses = {r["case_id"]: r["status"] for r in suite["case_results"]}
    assert statuses == {"short": "passed", "long": "error"}
    assert suite["cases"]["errors_by_kind"] == {"context_length": 1}
