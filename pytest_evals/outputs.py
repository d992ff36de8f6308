"""The per-run result folder (``--evals-report-dir DIR`` -> ``DIR/<timestamp>/``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

_RUN_DIR = pytest.StashKey["Path | None"]()


def run_dir(config: pytest.Config) -> Path | None:
    """This run's timestamped folder, created on first use; None without --evals-report-dir."""
    if _RUN_DIR in config.stash:
        return config.stash[_RUN_DIR]
    base = config.getoption("evals_report_dir", None) or config.getini("evals_report_dir")
    folder: Path | None = None
    if base:
        root = Path(base)
        if not root.is_absolute():
            root = Path(config.invocation_params.dir) / root
        stamp = time.strftime("%Y-%m-%dT%H-%M-%S", time.localtime())
        folder = root / stamp
        n = 1
        while folder.exists():
            n += 1
            folder = root / f"{stamp}_{n}"
        folder.mkdir(parents=True)
    config.stash[_RUN_DIR] = folder
    return folder
