"""``pytest-evals power`` against a simulation of the exact McNemar test."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from pytest_evals.regression.power_analysis import cases_needed, power


def _simulated(n: int, drop: float, flip: float, runs: int = 1500) -> float:
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(runs):
        u = rng.random(n)
        worse = int(np.sum(u < drop + flip))
        better = int(np.sum((u >= drop + flip) & (u < drop + 2 * flip)))
        if worse + better and binomtest(worse, worse + better, 0.5, alternative="greater").pvalue <= 0.05:
            hits += 1
    return hits / runs


@pytest.mark.parametrize(("n", "drop", "flip"), [(100, 0.05, 0.0), (300, 0.02, 0.01), (1000, 0.02, 0.02)])
def test_power_matches_simulation(n: int, drop: float, flip: float) -> None:
    assert power(n, drop, flip) == pytest.approx(_simulated(n, drop, flip), abs=0.04)


def test_more_noise_needs_more_cases() -> None:
    quiet, noisy = cases_needed(0.02), cases_needed(0.02, 0.02)
    assert quiet is not None and noisy is not None
    assert noisy > 2 * quiet
    assert power(quiet, 0.02) >= 0.8


def test_cli_prints_the_table(pytester: pytest.Pytester) -> None:
    result = pytester.run("pytest-evals", "power", "--p", "0.9", "--drop", "0.02", "--flip", "0.01")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["paired cases needed for power 0.8: *", "*cases  power", "*35000  1.000"])
    bad = pytester.run("pytest-evals", "power", "--p", "0.9", "--drop", "1.5")
    assert bad.ret == 2
    assert "--drop must be in" in bad.stdout.str()
