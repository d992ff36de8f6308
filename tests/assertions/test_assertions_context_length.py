"""A judged case whose prompt is longer than the judge model's context is an ERROR of its
own kind (context_length, with the token counts), counted apart from outages; the other
cases are judged."""

from __future__ import annotations

import pytest

from .conftest import JudgeServer, read_json, suite_summary, write_suite


def test_an_overlong_case_is_a_context_length_error(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    # Room for the short case's prompt and the JSON judge's own max_tokens (1024).
    judge_server.server.configure(max_context=1500)
    cases = [
        {"id": "short", "question": "Is the sky blue?", "output": "Yes, on a clear day."},
        {"id": "long", "question": "Summarise: " + "very long document text " * 400, "output": "A summary."},
    ]
    write_suite(pytester.path, cases, asserts=[{"type": "llm_rubric", "criteria": "The answer is polite."}])
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    suite = suite_summary(read_json(pytester.path / "s.json"))
    statuses = {r["case_id"]: r["status"] for r in suite["case_results"]}
    assert statuses == {"short": "passed", "long": "error"}
    assert suite["cases"]["errors_by_kind"] == {"context_length": 1}
    result.stdout.fnmatch_lines(["*longer than the model's context*limit 1500 tokens*"])
    # sent once: a retry cannot make it fit
    assert sum("very long document" in m for m in judge_server.prompts()) == 0
    assert judge_server.server.stats()["outcomes"].get("context_length") == 1
