"""Shared fixtures of the HaluEval tests: the real data, read-only, beside the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA_DIR = REPO.parent / "shared" / "data" / "halueval"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The official HaluEval files (``<repo>/../shared/data/halueval``)."""
    assert (DATA_DIR / "qa_data.json").is_file(), f"HaluEval data missing at {DATA_DIR}"
    return DATA_DIR
