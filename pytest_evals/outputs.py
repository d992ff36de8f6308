"""The per-run result folder (``--evals-report-dir DIR`` -> ``DIR/<timestamp>/``)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.redact import scrub

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


_UNSAFE = re.compile(r"[^\w.\-]+")


def folder_name(name: str) -> str:
    """A suite name as a single, safe path component (never "..", never a separator)."""
    cleaned = _UNSAFE.sub("_", name).strip("._") or "suite"
    return cleaned[:120]


def suite_folders(suites: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """suite id -> its folder in the run folder: the safe name, made unique in order."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for s in suites:
        name = base = folder_name(str(s.get("name") or s.get("suite")))
        n = 1
        while name in used:
            n += 1
            name = f"{base}-{n}"
        used.add(name)
        out[str(s.get("suite"))] = name
    return out


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write a file so that readers (another xdist process, a crashed run's rerun) see the
    old content or the new one, never half a file: a temporary file, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if isinstance(data, bytes):
        tmp.write_bytes(data)
    else:
        # Every text file the run writes passes here: mask secrets, escape surrogates.
        tmp.write_text(scrub(data), encoding="utf-8", newline="")
    os.replace(tmp, path)
