"""The classification family's pytest hooks: GOV.UK-shaped CSV files in the run folder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.model.case_result import CaseResult


@pytest.hookimpl
def pytest_evals_suite_folder(
    folder: Path, suite: dict[str, Any], results: Sequence[CaseResult]
) -> dict[str, str] | None:
    from pytest_evals.families.classification.csv_files import write_govuk_csvs

    return write_govuk_csvs(folder, suite, results)
