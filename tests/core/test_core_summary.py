"""The ``--evals-json`` summary (validated against tests/core/summary.schema.json) and JUnit XML."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from core_helpers import (
    jb,
    jb_counts,
    jb_suite,
    read_summary,
    suite_by_name,
    write_jsonl,
    write_suite,
)

SCHEMA_PATH = Path(__file__).with_name("summary.schema.json")

ROUTER_ROWS = [
    {"id": "r1", "question": "hi", "expected_outcome": "greetings", "actual_outcome": "greetings"},
    {
        "id": "r2",
        "question": "thanks",
        "expected_outcome": "gratitude",
        "actual_outcome": "greetings",
    },
    {
        "id": "r3",
        "question": "passport?",
        "expected_outcome": "genuine_rag",
        "actual_outcome": "genuine_rag",
    },
    {
        "id": "r4",
        "question": "visa?",
        "expected_outcome": "genuine_rag",
        "actual_outcome": "genuine_rag",
    },
]

GUARD_ROWS = [
    {
        "id": "g1",
        "expected_triggered": True,
        "actual_triggered": True,
        "expected_guardrails": {"pii": True},
        "actual_guardrails": {"pii": True},
    },
    {
        "id": "g2",
        "expected_triggered": False,
        "actual_triggered": True,
        "expected_guardrails": {"pii": False},
        "actual_guardrails": {"pii": True},
    },
    {
        "id": "g3",
        "expected_triggered": False,
        "actual_triggered": False,
        "expected_guardrails": {"pii": False},
        "actual_guardrails": {"pii": False},
    },
]

TARGET = "def classify(case):\n    return {'actual_outcome': 'bad' in case['question']}\n"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(data)
    return data


def _validate(schema: dict[str, Any], summary: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(
        summary
    )


def _every_suite_kind(root: Path) -> None:
    jb_suite(
        root,
        "jb",
        [*jb_counts(tp=4, tn=3, fp=1, fn=1), "not json"],
        thresholds={"accuracy": 0.6, "errors": {"max": 1}},
    )
    write_jsonl(root, "data/qr.jsonl", ROUTER_ROWS)
    write_suite(
        root,
        "qr.eval.yaml",
        task="question_router",
        input_path="data/qr.jsonl",
        thresholds={"macro_f1": {"min": 0.1}},
    )
    write_jsonl(root, "data/og.jsonl", GUARD_ROWS)
    write_suite(
        root,
        "og.eval.yaml",
        task="output_guardrails",
        input_path="data/og.jsonl",
        thresholds={"per_guardrail": {"pii": {"precision": {"min": 0.9}}}},
    )
    write_jsonl(
        root,
        "data/q.jsonl",
        [
            jb(True, None, case_id="b1", question="bad"),
            jb(False, None, case_id="b2", question="ok"),
        ],
    )
    (root / "tgt.py").write_text(TARGET)
    write_suite(
        root,
        "gen.eval.yaml",
        task="jailbreak_guardrails",
        generate=True,
        input_path="data/q.jsonl",
        target="tgt:classify",
    )
    jb_suite(
        root,
        "undefined",
        jb_counts(tp=0, tn=2, fp=0, fn=0, prefix="u"),
        thresholds={"precision": {"min": 0.5}},
    )
    write_suite(root, "broken.eval.yaml", task="nope")


def test_summary_matches_schema_and_reports_everything(
    pytester: pytest.Pytester, schema: dict[str, Any]
) -> None:
    _every_suite_kind(pytester.path)
    result = pytester.runpytest("--evals-json", "out/summary.json")
    summary = read_summary(pytester.path / "out" / "summary.json")
    _validate(schema, summary)

    assert summary["exit_status"] == result.ret == 1
    assert {s["name"] for s in summary["suites"]} == {
        "jb",
        "qr",
        "og",
        "gen",
        "undefined",
        "broken.eval.yaml",
    }
    assert summary["passed"] is all(s["passed"] for s in summary["suites"]) is False
    assert suite_by_name(summary, "broken.eval.yaml")["task"] is None
    assert "unknown task 'nope'" in suite_by_name(summary, "broken.eval.yaml")["problems"][0]

    jb_s = suite_by_name(summary, "jb")
    assert jb_s["cases"] == {
        "total": 10,
        "passed": 7,
        "failed": 2,
        "errors": 1,
        "skipped": 0,
        "errors_by_kind": {"input": 1},
        # every collected case reported (issue 13's case accounting)
        "expected": 10,
        "received": 10,
    }
    assert jb_s["passed"] is True
    m = jb_s["metrics"]
    assert m["accuracy"]["value"] == pytest.approx(7 / 9)
    assert m["precision"]["value"] == pytest.approx(4 / 5)
    assert m["recall"]["value"] == pytest.approx(4 / 5)
    assert (m["tp"]["value"], m["tn"]["value"], m["fp"]["value"], m["fn"]["value"]) == (4, 3, 1, 1)
    assert m["errors"]["value"] == 1 and m["cases"]["value"] == 10
    # every defined proportion, mean and F-score carries its interval around its value
    for suite in summary["suites"]:
        for path, metric in _walk(suite["metrics"]):
            if metric["kind"] == "count":
                continue
            if metric["value"] is None:
                assert metric["reason"].startswith(("0/0", "needs")), (suite["name"], path)
                continue
            assert metric["ci_low"] <= metric["value"] <= metric["ci_high"], (suite["name"], path)
    assert {g["metric"]: g["passed"] for g in jb_s["gates"]} == {"accuracy": True, "errors": True}
    assert jb_s["reasons"] == []
    assert summary["warnings"] == []

    qr = suite_by_name(summary, "qr")
    assert qr["tables"]["confusion_matrix"] == {
        "labels": ["genuine_rag", "gratitude", "greetings"],
        "matrix": [[2, 0, 0], [0, 0, 1], [0, 0, 1]],
        "rows": "expected",
        "columns": "actual",
    }
    assert set(qr["metrics"]["per_class"]) == {"genuine_rag", "gratitude", "greetings"}

    og = suite_by_name(summary, "og")
    assert og["metrics"]["per_guardrail"]["pii"]["precision"]["value"] == 0.5
    assert og["passed"] is False

    undefined = suite_by_name(summary, "undefined")
    assert undefined["gates"] == [
        {
            "metric": "precision",
            "op": "min",
            "threshold": 0.5,
            "value": None,
            "passed": False,
            "reason": "undefined: 0/0: no predicted positives",
        }
    ]
    gen = suite_by_name(summary, "gen")
    assert gen["generate"] is True
    assert Path(gen["generated_path"]).is_file()


def test_schema_rejects_a_summary_that_breaks_it(
    pytester: pytest.Pytester, schema: dict[str, Any]
) -> None:
    # The schema must be strict enough to catch drift, not accept anything.
    jb_suite(pytester.path, "jb", jb_counts(tp=2, tn=2, fp=1, fn=0), thresholds={"precision": 0.9})
    pytester.runpytest("--evals-json", "s.json")
    good = read_summary(pytester.path / "s.json")
    _validate(schema, good)
    assert good["suites"][0]["passed"] is False
    assert good["suites"][0]["reasons"] == ["missed gate: precision = 0.6667, required >= 0.9"]
    breakages = {
        "no overall verdict": lambda s: s.pop("passed"),
        "verdict as text": lambda s: s.__setitem__("passed", "yes"),
        "gate without verdict": lambda s: s["suites"][0]["gates"][0].pop("passed"),
        "unknown gate op": lambda s: s["suites"][0]["gates"][0].__setitem__("op", "atleast"),
        "interval half missing": lambda s: s["suites"][0]["metrics"]["accuracy"].pop("ci_high"),
        "undefined without reason": lambda s: s["suites"][0]["metrics"]["accuracy"].__setitem__(
            "value", None
        ),
        "negative count": lambda s: s["suites"][0]["cases"].__setitem__("failed", -1),
        "unknown suite key": lambda s: s["suites"][0].__setitem__("verdict", True),
        "failed gate on undefined value passing": lambda s: s["suites"][0]["gates"][0].update(
            value=None, passed=True
        ),
        "failed suite without reasons": lambda s: s["suites"][0].__setitem__("reasons", []),
        "passed suite with reasons": lambda s: s["suites"][0].update(passed=True),
        "no warnings list": lambda s: s.pop("warnings"),
    }
    for name, breaker in breakages.items():
        broken = copy.deepcopy(good)
        breaker(broken)
        with pytest.raises(jsonschema.ValidationError):
            _validate(schema, broken)
            pytest.fail(f"schema accepted: {name}")


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_junit_xml_carries_case_scores_and_suite_aggregates(pytester: pytest.Pytester, workers: list[str]) -> None:
    jb_suite(
        pytester.path,
        "jb",
        [jb(True, True, case_id="hit"), jb(True, False, case_id="miss"), "oops"],
        thresholds={"recall": {"min": 0.9}},
    )
    run = pytester.runpytest_subprocess if workers else pytester.runpytest
    result = run("--junitxml", "junit.xml", *workers)
    result.assert_outcomes(passed=1, failed=1, errors=1)
    root = ET.parse(pytester.path / "junit.xml").getroot()
    testsuite = root if root.tag == "testsuite" else root.find("testsuite")
    assert testsuite is not None
    props = {
        str(p.get("name")): str(p.get("value")) for p in testsuite.findall("./properties/property")
    }
    assert props["evals.jb.passed"] == "false"
    assert props["evals.jb.recall"] == "0.5"
    assert props["evals.jb.accuracy"] == "0.5"
    low, high = (float(x) for x in props["evals.jb.accuracy.ci"].split(","))
    assert low < 0.5 < high
    assert props["evals.jb.tp"] == "1"
    assert props["evals.jb.errors"] == "1"
    assert props["evals.jb.f2"] == "undefined" or float(props["evals.jb.f2"]) >= 0
    assert props["evals.jb.gate.recall.min"] == "failed"

    cases = {tc.get("name"): tc for tc in testsuite.iter("testcase")}
    assert set(cases) == {"hit", "miss", "line-3"}

    def case_props(name: str) -> dict[str, str]:
        return {
            str(p.get("name")): str(p.get("value"))
            for p in cases[name].findall("./properties/property")
        }

    assert case_props("hit") == {"evals.status": "passed", "evals.score.correct": "1.0"}
    assert case_props("miss") == {"evals.status": "failed", "evals.score.correct": "0.0"}
    assert case_props("line-3")["evals.status"] == "error"
    assert cases["miss"].find("failure") is not None
    assert cases["line-3"].find("error") is not None


def _walk(tree: dict[str, Any], prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for key, value in tree.items():
        if "kind" in value and "value" in value:
            out.append((prefix + key, value))
        else:
            out.extend(_walk(value, prefix + key + "."))
    return out


def test_terminal_table_per_suite(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path, "data/og.jsonl", GUARD_ROWS)
    write_suite(
        pytester.path,
        "og.eval.yaml",
        task="output_guardrails",
        what="guardrails",
        input_path="data/og.jsonl",
        thresholds={"recall": {"min": 0.5}, "per_guardrail": {"pii": {"precision": 0.9}}},
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        [
            "*pytest_evals summary*",
            "og [output_guardrails] og.eval.yaml: 3 cases, 2 passed, 1 failed, 0 errors, 0 skipped -> FAILED",
            "  metric*value*95% CI*gate*result",
            "  accuracy*0.667*[[]0.094, 0.992[]]",  # Clopper-Pearson of 2/3
            "  recall*1.000*>= 0.5*pass",
            "  per_guardrail.pii.precision*0.500*>= 0.9*FAIL",
            "  (* nested metrics not shown: run with -v or read the JSON summary)",
            "  MISSED GATE og: per_guardrail.pii.precision = 0.5, required >= 0.9",
        ]
    )
    # -v shows every nested metric
    verbose = pytester.runpytest("-v")
    verbose.stdout.fnmatch_lines(["  per_guardrail.pii.recall*1.000*"])
    assert "nested metrics not shown" not in verbose.stdout.str()
