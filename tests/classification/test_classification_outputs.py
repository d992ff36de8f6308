"""What a generic classification suite says: neutral words in every output, its gates,
bad labels and fields as clear ERRORs, and its regression gates against a baseline."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from .support_data import summary, support_cases, write_cases, write_suite

#: Words of the seed systems that must never reach a generic suite's outputs.
FORBIDDEN = re.compile(r"jailbreak|guardrail|gov|government|router|topic", re.IGNORECASE)

BINARY = [
    {"id": "h1", "question": "I was charged twice", "expected": "escalate", "actual": "escalate"},
    {"id": "h2", "question": "how do I reset my password", "expected": "answer", "actual": "answer"},
    {"id": "h3", "question": "my account was taken over", "expected": "escalate", "actual": "answer"},
    {"id": "h4", "question": "where is my invoice", "expected": "answer", "actual": "escalate"},
    {"id": "h5", "question": "the outage cost us a day of sales", "expected": "escalate", "actual": "escalate"},
    {"id": "h6", "question": "do you ship to Canada", "expected": "answer", "actual": "answer"},
]


def _binary_suite(root: Path, **extra: Any) -> None:
    write_cases(root, "data/handoff.jsonl", BINARY)
    fields = {"input_path": "data/handoff.jsonl", "labels": ["escalate", "answer"], "positive_label": "escalate",
              "thresholds": {"accuracy": {"min": 0.5}}}
    write_suite(root, "handoff", **{**fields, **extra})


def _files(folder: Path) -> list[Path]:
    """Every text file under ``folder`` (PNG plots are compressed bytes; their SVG twins are read)."""
    return [p for p in folder.rglob("*") if p.is_file() and p.suffix != ".png"]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_generic_outputs_use_neutral_words_only(pytester: pytest.Pytester, workers: list[str]) -> None:
    _binary_suite(pytester.path)
    result = pytester.runpytest(
        "-v", "--evals-json", "out/summary.json", "--junitxml", "out/junit.xml", "--html", "out/report.html",
        "--self-contained-html", "--evals-markdown", "out/summary.md", "--evals-report-dir", "out/runs",
        "-p", "no:cacheprovider", *workers,
    )
    assert result.ret == 0, result.stdout.str()
    terminal = result.stdout.str() + result.stderr.str()
    # The misses in neutral words, the positive label named.
    assert "false negative: expected 'escalate', got 'answer'" in terminal
    assert "false positive: expected 'answer', got 'escalate'" in terminal
    assert "question: where is my invoice" in terminal
    (suite,) = summary(pytester.path, "out/summary.json")["suites"]
    assert suite["metrics"]["fn"]["value"] == 1 and suite["metrics"]["fp"]["value"] == 1
    junit = ET.parse(pytester.path / "out" / "junit.xml").getroot()
    failures = [f.get("message", "") + (f.text or "") for f in junit.iter("failure")]
    assert len(failures) == 2
    assert any("false negative: expected 'escalate', got 'answer'" in f for f in failures)
    html = (pytester.path / "out" / "report.html").read_text(encoding="utf-8")
    assert "expected &#39;answer&#39;, got &#39;escalate&#39;" in html or "expected 'answer', got 'escalate'" in html
    outputs = _files(pytester.path / "out")
    names = {p.name for p in outputs}
    assert {"summary.json", "junit.xml", "report.html", "summary.md", "results.csv", "confusion_matrix.csv"} <= names
    hits = {str(p.relative_to(pytester.path)): sorted({m.lower() for m in FORBIDDEN.findall(p.read_text(
        encoding="utf-8", errors="replace"))}) for p in outputs}
    hits["terminal"] = sorted({m.lower() for m in FORBIDDEN.findall(terminal)})
    assert {k: v for k, v in hits.items() if v} == {}


def test_multiclass_miss_reads_expected_got(pytester: pytest.Pytester) -> None:
    write_cases(pytester.path, "data/s.jsonl", [
        {"question": "give me another customer's address", "expected": "refuse", "actual": "answer"},
        {"question": "how do I reset my password", "expected": "answer", "actual": "answer"},
        {"question": "I was charged twice", "expected": "escalate", "actual": "escalate"},
    ])
    write_suite(pytester.path, "s", input_path="data/s.jsonl", labels=["escalate", "answer", "refuse"])
    result = pytester.runpytest("-p", "no:cacheprovider")
    # No gates: the miss fails the run as a plain test would.
    assert result.ret == 1
    result.stdout.fnmatch_lines(["expected 'refuse', got 'answer'", "question: give me another customer's address"])


def test_gates_on_generic_metrics_decide_the_exit_status(pytester: pytest.Pytester) -> None:
    _binary_suite(pytester.path, thresholds={"per_class": {"escalate": {"recall": {"min": 0.9}}},
                                             "baselines": {"majority": {"accuracy": {"max": 0.6}}}})
    result = pytester.runpytest("--evals-json", "s.json", "-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*MISSED GATE handoff: per_class.escalate.recall = 0.6667, required >= 0.9*"])
    (suite,) = summary(pytester.path, "s.json")["suites"]
    gates = {g["metric"]: g["passed"] for g in suite["gates"]}
    assert gates == {"per_class.escalate.recall": False, "baselines.majority.accuracy": True}
    _binary_suite(pytester.path, thresholds={"recall": {"min": 0.6}, "f1": {"ci_low": {"min": 0.1}}})
    assert pytester.runpytest("-p", "no:cacheprovider").ret == 0


def test_bad_labels_and_fields_are_case_errors_naming_line_and_field(pytester: pytest.Pytester) -> None:
    rows: list[Any] = [
        {"question": "q1", "expected": "escalate", "actual": "escalate"},
        {"question": "q2", "expected": "Escalate", "actual": "answer"},
        {"question": "q3", "expected": "answer", "actual": "maybe"},
        {"question": "q4", "expected": "answer"},
        {"question": "q5", "expected": True, "actual": "answer"},
        {"question": "q6", "expected": "answer", "actual": "answer"},
        ["not", "an", "object"],
    ]
    write_cases(pytester.path, "data/bad.jsonl", rows)
    write_suite(pytester.path, "bad", input_path="data/bad.jsonl", labels=["escalate", "answer", "refuse"],
                thresholds={"errors": {"max": 10}, "accuracy": {"min": 0.5}})
    result = pytester.runpytest("--evals-json", "s.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=5)
    out = result.stdout.str()
    assert ("data/bad.jsonl:2: field 'expected': 'Escalate' (text) is not one of the labels 'escalate', 'answer', "
            "'refuse' (labels are case- and space-sensitive: did you mean 'escalate'?)") in out
    assert "data/bad.jsonl:3: field 'actual': 'maybe' (text) is not one of the labels" in out
    assert "data/bad.jsonl:4: field 'actual': Field required" in out
    assert "data/bad.jsonl:5: field 'expected': true (a JSON boolean) is not one of the labels" in out
    assert "data/bad.jsonl:7: a case must be a JSON object, got list" in out
    (suite,) = summary(pytester.path, "s.json")["suites"]
    assert suite["cases"]["errors_by_kind"] == {"input": 5}
    assert suite["metrics"]["accuracy"]["n"] == 2  # the erroring cases are in no metric


def test_renamed_fields_missing_name_the_field(pytester: pytest.Pytester) -> None:
    write_cases(pytester.path, "data/r.jsonl", [{"question": "q", "expected": "answer", "actual": "answer"}])
    write_suite(pytester.path, "r", input_path="data/r.jsonl", labels=["escalate", "answer"],
                positive_label="escalate", fields={"expected": "gold", "actual": "bot"})
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*data/r.jsonl:1: field 'gold': Field required*field 'bot': Field required*"])


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"labels": ["escalate"]}, "field 'labels': Value error, declare at least two labels"),
        ({"labels": ["a", "b", "a"]}, "labels[2]: 'a' is declared twice (first as labels[0])"),
        ({"labels": ["a", 1.5]}, "labels[1]: a label is text, true/false or a whole number, got 1.5"),
        ({"labels": ["escalate", "answer"]}, "field 'positive_label': Value error, with two labels, name the "
                                              "positive one"),
        ({"labels": ["a", "b", "c"], "positive_label": "d"}, "field 'positive_label': Value error, 'd' (text) is "
                                                             "not one of the labels 'a', 'b', 'c'"),
        ({"labels": ["a", "b", "c"], "fields": {"gold": "x"}}, "field 'fields': Value error, unknown key 'gold'"),
        ({"labels": ["a", "b", "c"], "expected_field": "x", "fields": {"expected": "y"}},
         "expected: 'y' contradicts expected_field: 'x'"),
        ({"labels": ["a", "b", "c"], "actual_field": "expected"}, "cannot both be field 'expected'"),
        ({"labels": ["a", "b", "c"], "beta": 0}, "field 'beta': Input should be greater than 0"),
        ({"labels": ["a", "b", "c"], "thresholds": {"macro_f1": {"max_drop": 0.02}}},
         "thresholds.macro_f1.max_drop: macro_f1 is an average over classes, not a sum over cases"),
        ({"labels": ["a", "b"], "positive_label": "a", "thresholds": {"fn": {"max_rise": 2}}},
         "thresholds.fn.max_rise: fn is a count, which the paired test does not compare"),
        ({"labels": ["a", "b", "c"], "thresholds": {"baselines": {"majority": {"accuracy": {"max_drop": 0.1}}}}},
         "thresholds.baselines.majority.accuracy.max_drop: baselines.majority.accuracy scores a classifier"),
        ({}, "field 'labels': Field required"),
    ],
)
def test_bad_suite_fields_are_one_suite_error(pytester: pytest.Pytester, fields: dict[str, Any], message: str) -> None:
    write_cases(pytester.path, "data/x.jsonl", [{"expected": "a", "actual": "a"}])
    write_suite(pytester.path, "x", input_path="data/x.jsonl", **fields)
    write_cases(pytester.path, "data/ok.jsonl", [{"expected": "a", "actual": "a"}, {"expected": "b", "actual": "b"}])
    write_suite(pytester.path, "ok", input_path="data/ok.jsonl", labels=["a", "b"], positive_label="a")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)  # the other suite still runs
    assert message in result.stdout.str()
    assert "x.eval.yaml" in result.stdout.str()


def _regression_run(pytester: pytest.Pytester, wrong: set[int], *args: str) -> tuple[pytest.RunResult, Any]:
    rows = support_cases(300, seed=11, miss_rate=0.0)
    for i in wrong:
        rows[i]["actual"] = "answer" if rows[i]["expected"] != "answer" else "refuse"
    write_cases(pytester.path, "data/reg.jsonl", rows)
    write_suite(pytester.path, "reg", input_path="data/reg.jsonl", labels=["escalate", "answer", "refuse"],
                positive_label="escalate",
                thresholds={"recall": {"min": 0.5, "max_drop": 0.02},
                            "per_class": {"refuse": {"precision": {"max_drop": 0.05}}},
                            "weighted_recall": {"max_drop": 0.02}, "accuracy": {"max_drop": 0.02}})
    result = pytester.runpytest("--evals-json", "reg.json", "-p", "no:cacheprovider", *args)
    return result, summary(pytester.path, "reg.json")["suites"][0]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_max_drop_on_generic_metrics(pytester: pytest.Pytester, workers: list[str]) -> None:
    result, _ = _regression_run(pytester, set(), *workers)
    assert result.ret == 0, result.stdout.str()
    (pytester.path / "base.json").write_text((pytester.path / "reg.json").read_text())
    # The same outputs again: no gate sees a regression.
    result, same = _regression_run(pytester, set(), "--evals-baseline", "base.json", *workers)
    assert result.ret == 0, result.stdout.str()
    verdicts = {g["metric"]: g["verdict"] for g in same["baseline"]["gates"]}
    assert set(verdicts) == {"recall", "per_class.refuse.precision", "weighted_recall", "accuracy"}
    assert "regression" not in verdicts.values()
    # Escalations now missed (answered instead): recall of 'escalate' drops, and so do
    # accuracy and weighted recall (the same quantity); refuse's precision does not move.
    escalations = [i for i, r in enumerate(support_cases(300, seed=11, miss_rate=0.0)) if r["expected"] == "escalate"]
    result, worse = _regression_run(pytester, set(escalations[:25]), "--evals-baseline", "base.json", *workers)
    assert result.ret == 1
    gates = {g["metric"]: g for g in worse["baseline"]["gates"]}
    assert gates["recall"]["verdict"] == "regression"
    assert gates["recall"]["diff"] == pytest.approx(worse["metrics"]["recall"]["value"] - 1.0)
    assert gates["accuracy"]["verdict"] == gates["weighted_recall"]["verdict"] == "regression"
    assert gates["weighted_recall"]["diff"] == pytest.approx(gates["accuracy"]["diff"])
    assert gates["per_class.refuse.precision"]["verdict"] != "regression"
    result.stdout.fnmatch_lines(["*recall max drop 0.02*-> regression*"])
