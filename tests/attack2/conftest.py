"""Reproducers of defects found by hostile testing (attack2). Each test is marked
``defect("<id>: <summary>")``; they fail on the tree they were written against."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# the variant tests' loopback helpers (responder with per-model wrong cases)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "variants"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "defect(summary): the defect (attack2 report id) this test reproduces")
