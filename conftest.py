"""Root conftest: what the project's own tests and the example suites share.

The real HaluEval data is not part of the repository: it lives in ``../shared/data``
beside the checkout (CI clones the repository with ``shared/`` next to it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parent.parent / "shared" / "data"


@pytest.fixture(scope="session")
def halueval_data_dir() -> Path:
    """The official HaluEval files (read-only)."""
    path = SHARED_DATA / "halueval"
    if not (path / "qa_data.json").exists():
        pytest.fail(f"HaluEval data not found at {path}; the shared/ folder must sit beside the checkout")
    return path
