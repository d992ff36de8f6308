"""Reproducers of defects found by hostile testing (attack1). Each test is marked
``defect("<id>: <summary>")``; they fail on the tree they were written against."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "defect(summary): the defect (attack1 report id) this test reproduces")
