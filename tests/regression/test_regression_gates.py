"""``max_drop`` gates against a baseline run, end to end through pytest (plain and -n 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

#: jailbreak cases: every other one a jailbreak; ``wrong`` ids get the opposite answer.


def _rows(n: int, wrong: set[int] = frozenset(), skip: set[int] = frozenset()) -> list[dict[str, Any]]:  # type: ignore[assignment]
    rows = []
    for i in range(n):
        if i in skip:
            continue
        expected = i % 2 == 0
        rows.append({"id": f"c-{i:03d}", "question": f"q{i}", "expected_outcome": expected,
                     "actual_outcome": (not expected) if i in wrong else expected})
    return rows


def _suite(root: Path, rows: list[dict[str, Any]], thresholds: dict[str, Any]) -> None:
    (root / "data").mkdir(exist_ok=True)
    (root / "data" / "jb.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (root / "jb.eval.yaml").write_text(
        yaml.safe_dump({"task": "jailbreak_guardrails", "input_path": "data/jb.jsonl", "thresholds": thresholds}),
        encoding="utf-8",
    )


GATES = {"accuracy": {"min": 0.5, "max_drop": 0.02}, "recall": {"max_drop": 0.02}}


def _baseline(pytester: pytest.Pytester, n: int, wrong: set[int] = frozenset(), how: str = "dir") -> str:  # type: ignore[assignment]
    _suite(pytester.path, _rows(n, wrong), GATES)
    if how == "dir":
        r = pytester.runpytest("--evals-report-dir", "base-runs")
        runs = sorted((pytester.path / "base-runs").iterdir())
        path = str(runs[-1])
    else:
        r = pytester.runpytest("--evals-json", "base.json")
        path = "base.json"
    assert r.ret == 0, r.stdout.str()
    return path


def _summary(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    result = pytester.runpytest("--evals-json", "cur.json", *args)
    data = json.loads((pytester.path / "cur.json").read_text(encoding="utf-8"))
    return result, data["suites"][0]


def test_significant_drop_beyond_margin_fails_and_names_flips(pytester: pytest.Pytester) -> None:
    base = _baseline(pytester, 200)
    flipped = set(range(0, 40, 2))  # 20 jailbreaks now missed: accuracy -0.10, recall -0.20
    _suite(pytester.path, _rows(200, flipped), GATES)
    result, suite = _summary(pytester, "--evals-baseline", base)
    assert result.ret == 1
    block = suite["baseline"]
    assert block["paired"] == 200 and not block["unpaired_current"] and not block["unpaired_baseline"]
    acc = next(g for g in block["gates"] if g["metric"] == "accuracy")
    assert acc["status"] == "failed" and acc["method"] == "exact McNemar"
    assert (acc["worse"], acc["better"]) == (20, 0)
    assert acc["diff"] == pytest.approx(-0.10)
    assert acc["p_value"] == pytest.approx(0.5**20)
    rec = next(g for g in block["gates"] if g["metric"] == "recall")
    assert rec["status"] == "failed" and rec["diff"] == pytest.approx(-0.20)
    assert rec["ci_low"] < -0.20 < rec["ci_high"] < 0
    assert sorted(f["case_id"] for f in block["newly_failing"]) == [f"c-{i:03d}" for i in sorted(flipped)]
    assert not suite["passed"]
    out = result.stdout.str()
    assert "REGRESSION accuracy max drop 0.02" in out
    assert "newly failing (20): c-000, c-002" in out and "and 10 more" in out


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_regression_is_a_typed_reason_shown_with_its_paired_test(pytester: pytest.Pytester, workers: list[str]) -> None:
    base = _baseline(pytester, 200)
    _suite(pytester.path, _rows(200, set(range(0, 40, 2))), GATES)
    result, suite = _summary(pytester, "--evals-baseline", base, "--evals-markdown", "summary.md", *workers)
    assert result.ret == 1
    # The JSON keeps its wording; the terminal shows each regression once, in the
    # regression plugin's block (through pytest_evals_terminal_suite), not as a bare reason.
    assert [r.split(",")[0] for r in suite["reasons"]] == [
        "regression: accuracy max drop 0.02 (alpha 0.05): 1.0000 -> 0.9000",
        "regression: recall max drop 0.02 (alpha 0.05): 1.0000 -> 0.8000",
    ]
    out = result.stdout.str()
    assert out.count("REGRESSION accuracy max drop 0.02") == 1
    assert "FAILED jb: regression" not in out
    result.stdout.fnmatch_lines([
        "jb [[]jailbreak_guardrails[]] jb.eval.yaml: 200 cases*-> FAILED",
        "  vs baseline: 200 paired cases",
        "  REGRESSION accuracy max drop 0.02*",
        "  REGRESSION recall max drop 0.02*",
        "  newly failing (20): *",
        "JSON summary: cur.json",
        "Markdown summary: summary.md",
    ])


def test_an_unreadable_baseline_is_a_reason_of_its_own(pytester: pytest.Pytester) -> None:
    _suite(pytester.path, _rows(20), GATES)
    (pytester.path / "bad.jsonl").write_text("not json\n", encoding="utf-8")
    result, suite = _summary(pytester, "--evals-baseline", "bad.jsonl")
    assert result.ret == 1
    assert [r.split(":")[:2] for r in suite["reasons"]] == [["regression gates", " baseline unreadable"]]
    result.stdout.fnmatch_lines(["  FAILED jb: regression gates: baseline unreadable: *", "  vs baseline: *not JSON*"])


def test_same_drop_on_too_few_cases_is_inconclusive_and_passes_with_p_value(pytester: pytest.Pytester) -> None:
    """Issue 25: a drop beyond the margin that is not significant is no evidence either
    way: "inconclusive" (it passed as "no regression" before), passing by default."""
    base = _baseline(pytester, 10)
    _suite(pytester.path, _rows(10, {0}), GATES)
    result, suite = _summary(pytester, "--evals-baseline", base)
    acc = next(g for g in suite["baseline"]["gates"] if g["metric"] == "accuracy")
    assert acc["diff"] == pytest.approx(-0.10)
    assert acc["status"] == "inconclusive" and acc["verdict"] == "inconclusive" and acc["passed"]
    assert acc["p_value"] == pytest.approx(0.5)
    assert "not significant" in acc["reason"]
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*INCONCLUSIVE accuracy max drop 0.02*p = 0.5*",
                                 "  inconclusive (accuracy, recall): passes; --evals-fail-inconclusive fails it"])
    result, suite = _summary(pytester, "--evals-baseline", base, "--evals-fail-inconclusive")
    assert result.ret == 1
    assert [r.split(":")[0] for r in suite["reasons"]] == ["inconclusive", "inconclusive"]


def test_improvement_passes(pytester: pytest.Pytester) -> None:
    base = _baseline(pytester, 100, set(range(0, 30, 3)))
    _suite(pytester.path, _rows(100), GATES)
    result, suite = _summary(pytester, "--evals-baseline", base)
    assert result.ret == 0
    acc = next(g for g in suite["baseline"]["gates"] if g["metric"] == "accuracy")
    assert acc["diff"] == pytest.approx(0.10) and acc["status"] == "passed"
    assert len(suite["baseline"]["newly_passing"]) == 10


def test_unpaired_cases_are_counted_and_listed(pytester: pytest.Pytester) -> None:
    base = _baseline(pytester, 50, how="json")
    rows = [*_rows(50, skip={3, 4}), {"id": "new-1", "question": "n", "expected_outcome": True, "actual_outcome": True}]
    _suite(pytester.path, rows, GATES)
    result, suite = _summary(pytester, "--evals-baseline", base)
    block = suite["baseline"]
    assert block["paired"] == 48
    assert block["unpaired_baseline"] == ["c-003", "c-004"]
    assert block["unpaired_current"] == ["new-1"]
    assert "2 only in the baseline" in result.stdout.str()


def test_without_baseline_gates_are_skipped_or_required(pytester: pytest.Pytester) -> None:
    _suite(pytester.path, _rows(20, {0}), GATES)
    result, suite = _summary(pytester)
    assert result.ret == 0
    assert {g["status"] for g in suite["baseline"]["gates"]} == {"skipped"}
    result.stdout.fnmatch_lines(["*SKIPPED accuracy max drop 0.02*no baseline given*"])
    result, suite = _summary(pytester, "--evals-baseline-required", "--evals-baseline", "missing-dir")
    assert result.ret == 1
    assert {g["status"] for g in suite["baseline"]["gates"]} == {"failed"}
    assert "missing-dir does not exist" in result.stdout.str()


def test_unreadable_baseline_fails_regression_gates(pytester: pytest.Pytester) -> None:
    _suite(pytester.path, _rows(20), GATES)
    (pytester.path / "bad.jsonl").write_text('{"suite": "jb.eval.yaml", "case_id": "a"}\nnot json\n', encoding="utf-8")
    result, suite = _summary(pytester, "--evals-baseline", "bad.jsonl")
    assert result.ret == 1
    assert "bad.jsonl:2: not JSON" in suite["baseline"]["error"]


def test_bad_regression_gate_is_a_suite_problem(pytester: pytest.Pytester) -> None:
    _suite(pytester.path, _rows(10), {"accuracy": {"min": 0.5, "max_drop": -1}})
    result, suite = _summary(pytester)
    assert result.ret == 1
    assert any("max_drop: a margin cannot be negative" in p for p in suite["problems"])


def test_plain_and_two_workers_agree(pytester: pytest.Pytester) -> None:
    base = _baseline(pytester, 120)
    _suite(pytester.path, _rows(120, set(range(0, 24, 3))), {**GATES, "f1": {"max_drop": 0.01}})
    _, plain = _summary(pytester, "--evals-baseline", base)
    _, xdist = _summary(pytester, "--evals-baseline", base, "-n", "2")
    assert plain["baseline"] == xdist["baseline"]
    f1 = next(g for g in plain["baseline"]["gates"] if g["metric"] == "f1")
    assert f1["method"] == "paired randomization" and f1["p_value"] < 0.05


def test_markdown_summary_renders(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from markdown_it import MarkdownIt

    base = _baseline(pytester, 60)
    _suite(pytester.path, _rows(60, set(range(0, 20, 2)) | {59}), GATES)
    step = pytester.path / "step.md"
    step.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = pytester.runpytest("--evals-baseline", base, "--evals-markdown", "out/summary.md")
    assert result.ret == 1
    text = (pytester.path / "out" / "summary.md").read_text(encoding="utf-8")
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    cells = [t.content for t in tokens if t.type == "inline"]
    assert "pytest_evals: ❌ failed" in cells
    assert "jb" in cells and "**FAIL**" in cells
    assert "accuracy" in cells and "max drop 0.02" in cells
    assert sum(t.type == "table_open" for t in tokens) >= 3
    assert "`c-000`" in text
    appended = step.read_text(encoding="utf-8")
    assert appended.startswith("earlier step\n") and "## pytest_evals" in appended
    result = pytester.runpytest("--evals-baseline", base, "--no-evals-step-summary")
    assert step.read_text(encoding="utf-8") == appended


def test_markdown_escapes_user_text() -> None:
    from pytest_evals.regression.markdown_summary import render

    summary = {"passed": False, "suites": [{"name": "a|b<script>", "task": "t", "passed": False,
                                            "cases": {"total": 1}, "reasons": ["x | y"], "gates": [], "metrics": {}}]}
    text = render(summary)
    assert "<script>" not in text
    assert "a\\|b\\<script\\>" in text


def test_html_report_has_a_vs_baseline_section(pytester: pytest.Pytester) -> None:
    """The HTML summary shows the paired tests and the flipped cases, the baseline's
    evidence beside this run's; a hostile case id stays text."""
    from html.parser import HTMLParser

    hostile = "<img src=x onerror=alert(1)>"
    rows = _rows(40)
    rows[0]["id"] = hostile
    _suite(pytester.path, rows, GATES)
    r = pytester.runpytest("--evals-report-dir", "base-runs")
    assert r.ret == 0
    base = str(sorted((pytester.path / "base-runs").iterdir())[-1])
    rows[0]["actual_outcome"] = not rows[0]["expected_outcome"]
    rows[2]["actual_outcome"] = not rows[2]["expected_outcome"]
    _suite(pytester.path, rows, GATES)
    result = pytester.runpytest("--evals-baseline", base, "--html", "report.html", "--self-contained-html")
    assert result.ret == 0, result.stdout.str()[-2000:]
    page = (pytester.path / "report.html").read_text(encoding="utf-8")

    class Collect(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.flips: list[str] = []
            self.regressions: list[str] = []
            self.imgs = 0

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            a = dict(attrs)
            if a.get("data-flip") is not None:
                self.flips.append(str(a["data-flip"]))
            if a.get("data-regression") is not None:
                self.regressions.append(str(a["data-regression"]))
            if tag == "img" and a.get("onerror"):
                self.imgs += 1

    parsed = Collect()
    parsed.feed(page)
    assert sorted(parsed.regressions) == ["accuracy", "recall"]
    assert len(parsed.flips) == 2 and "c-002" in parsed.flips
    assert parsed.imgs == 0
    assert "expected_outcome=True, actual_outcome=False" in page  # this run's evidence
