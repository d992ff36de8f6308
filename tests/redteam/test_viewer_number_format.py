"""The viewer writes numbers as rm-bias's viewer does: Python's ``f"{x:.3f}"`` (issue 28).

JavaScript's ``toFixed`` rounds an exact tie up in magnitude, Python to even; a bf16
reward model's 3.0625 is "3.062" in their viewer. The page's own ``fmt`` (taken from the
shipped script) runs in Chromium on ties, near-ties and random values at 0, 1, 3 and 6
places and must print what Python prints.
"""

from __future__ import annotations

import random
from importlib import resources
from typing import Any

import pytest

DIGITS = (0, 1, 3, 6)


def page_functions() -> str:
    script = resources.files("pytest_evals.families.redteam").joinpath("assets", "viewer.js").read_text(encoding="utf-8")
    start = script.index("  function isNum(v)")
    return script[start:script.index("  function preview(", start)]


def values() -> list[float]:
    rng = random.Random(28)
    ties = [k / 16 for k in range(-400, 400)] + [k / 128 for k in range(-300, 300)] + [k / 1024 for k in range(-3000, 3000, 7)]
    near = [x + d for x in (0.0625, -0.0625, 2.5, 3.0625) for d in (1e-15, -1e-15)]
    return ties + near + [rng.uniform(-100, 100) for _ in range(3000)] + [round(rng.uniform(-10, 10), 4) for _ in range(2000)] + [
        0.0, -0.0, 1e-9, -1e-9, 123456.0625, 1e20, 5e-324]


@pytest.mark.browser
def test_the_page_rounds_as_python(browser: Any) -> None:
    vals = values()
    shown = browser.execute_script(
        "var NA = 'N/A';\n" + page_functions() + "\nvar ds = arguments[1];"
        "\nreturn arguments[0].map(function (v) { return ds.map(function (d) { return fmt(v, d); }); });",
        vals, list(DIGITS),
    )
    wrong = [(v, got) for v, got in zip(vals, shown, strict=True) if got != [f"{v:.{d}f}" for d in DIGITS]]
    assert wrong == []
    assert shown[vals.index(3.0625)][2] == "3.062" and shown[vals.index(-0.0625)][2] == "-0.062"
    assert browser.execute_script("var NA = 'N/A';\n" + page_functions() + "\nreturn [fmt(null), fmt(NaN), fmt(Infinity)];") == ["N/A"] * 3
