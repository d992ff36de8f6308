"""Suite warnings: a task's notes that do not fail its suite reach the terminal, the JSON
summary and the HTML summary, plain and under ``-n 2``."""

from __future__ import annotations

import pytest
from core_helpers import read_summary, suite_by_name, write_jsonl, write_suite

from pytest_evals.reports.summary_html import suite_section

#: A task whose cases pass when "reply" is "yes"; replies it cannot read count as "no"
#: and are reported as a suite warning (the HaluEval rule in miniature).
CONFTEST = """
from pytest_evals import CaseResult, Task, register_task
from pytest_evals.model.metric_value import count


class Replies(Task):
    name = "replies"

    def validate_case(self, data, ref):
        return data

    async def evaluate(self, case, ref, ctx):
        result = self.new_result(ref)
        result.data["unparseable"] = case["reply"] not in ("yes", "no")
        result.status = "passed" if case["reply"] == "yes" else "failed"
        return result

    def aggregate(self, results):
        return {"unparseable": count(sum(r.data["unparseable"] for r in results))}, {}

    def suite_warnings(self, results, metrics):
        n = int(metrics["unparseable"].value)
        return [f"{n} of {len(results)} replies were unparseable (counted as no)"] if n else []


register_task("replies", Replies)
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_task_warnings_are_shown_everywhere(pytester: pytest.Pytester, workers: list[str]) -> None:
    pytester.makeconftest(CONFTEST)
    rows = [{"id": f"r{i}", "reply": "yes" if i % 3 else "???"} for i in range(9)]
    write_jsonl(pytester.path, "data/r.jsonl", rows)
    write_suite(pytester.path, "r.eval.yaml", task="replies", input_path="data/r.jsonl",
                thresholds={"unparseable": {"max": 5}})
    write_suite(pytester.path, "clean.eval.yaml", task="replies", input_path="data/c.jsonl")
    write_jsonl(pytester.path, "data/c.jsonl", [{"id": "c0", "reply": "yes"}])
    result = pytester.runpytest_subprocess(*workers, "--evals-json", "s.json", "-p", "no:cacheprovider")
    # The gate allows 5 unparseable replies: the suite passes, with a warning.
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*WARNING r: 3 of 9 replies were unparseable (counted as no)"])
    summary = read_summary(pytester.path / "s.json")
    warned = suite_by_name(summary, "r")
    assert warned["passed"] is True
    assert warned["warnings"] == ["3 of 9 replies were unparseable (counted as no)"]
    assert suite_by_name(summary, "clean")["warnings"] == []
    assert "WARNING clean" not in result.stdout.str()
    html = suite_section(warned, 0, [], None)
    assert "<li>Warning: 3 of 9 replies were unparseable (counted as no)</li>" in html


def test_warnings_are_escaped_in_html() -> None:
    suite = {"suite": "s.eval.yaml", "name": "s", "task": "t", "passed": True, "cases": {}, "metrics": {},
             "gates": [], "problems": [], "warnings": ["<b>5</b> odd replies"]}
    html = suite_section(suite, 0, [], None)
    assert "&lt;b&gt;5&lt;/b&gt; odd replies" in html and "<b>5</b>" not in html
