"""The job ledger: what every batch covers, written before the batch exists.

``<cache dir>/_batches/`` holds one JSON file per batch job. It is written (atomically)
at each step: ``uploading`` before the input file is sent, ``submitting`` with the
input file id before the batch is created, ``submitted`` with the batch id, then
``filled`` once its answers are in the cache. A run killed at any step leaves a record
that the next ``--evals-batch`` run resumes: a ``submitted`` batch is polled and
filled, a ``submitting`` one is looked up among the provider's batches by its input
file (the create call may have gone through before the kill), an ``uploading`` one is
dropped (nothing was paid). The keys each job covers are never gathered again while it
is pending, so nothing is paid twice.

The same folder holds a lock (one process of a run gathers at a time) and a marker per
run (the run's failed keys and whether gathering is finished), shared by xdist workers.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_evals.hardening import redaction

FOLDER = "_batches"
PENDING = ("uploading", "submitting", "submitted")


def folder(cache_dir: Path) -> Path:
    return Path(cache_dir) / FOLDER


def write_json(path: Path, data: Any) -> None:
    """Atomic: a reader (another worker, a killed run's successor) sees old or new, never half.
    Secrets masked: a provider's status or error may quote a key."""
    data = redaction.scrub_obj(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh, separators=(",", ":"))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


@dataclass
class Job:
    """One batch: its input, its keys (key -> cache namespaces) and where it stands."""

    id: str
    base_url: str
    run_id: str
    round: int
    input_path: str
    lines: int
    bytes: int
    keys: dict[str, list[str]]
    status: str = "uploading"
    input_file_id: str | None = None
    batch_id: str | None = None
    #: The provider's last status of the batch (completed, expired, cancelled...).
    batch_status: str | None = None
    completed: int = 0
    failed: int = 0
    created: float = field(default_factory=time.time)
    finished: float | None = None
    note: str = ""

    @classmethod
    def new(cls, base_url: str, run_id: str, round_: int, input_path: Path, keys: dict[str, list[str]], size: int) -> Job:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        return cls(
            id=f"{stamp}-{uuid.uuid4().hex[:8]}",
            base_url=base_url,
            run_id=run_id,
            round=round_,
            input_path=str(input_path),
            lines=len(keys),
            bytes=size,
            keys=keys,
        )

    def path(self, cache_dir: Path) -> Path:
        return folder(cache_dir) / f"job-{self.id}.json"

    def save(self, cache_dir: Path) -> None:
        write_json(self.path(cache_dir), asdict(self))

    @property
    def pending(self) -> bool:
        return self.status in PENDING


def load_jobs(cache_dir: Path) -> list[Job]:
    """Every job of this cache directory, oldest first; unreadable files are skipped."""
    jobs = []
    for path in sorted(folder(cache_dir).glob("job-*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            jobs.append(Job(**data))
        except (OSError, ValueError, TypeError):
            continue
    return jobs


# -- the run marker -------------------------------------------------------------------------
def marker_path(cache_dir: Path, run_id: str) -> Path:
    return folder(cache_dir) / f"run-{run_id}.json"


def read_marker(cache_dir: Path, run_id: str) -> dict[str, Any]:
    try:
        data = json.loads(marker_path(cache_dir, run_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_marker(cache_dir: Path, run_id: str, data: dict[str, Any]) -> None:
    write_json(marker_path(cache_dir, run_id), data)


@contextlib.contextmanager
def gather_lock(cache_dir: Path) -> Iterator[None]:
    """One process gathers and batches at a time (xdist workers of a run, or two runs)."""
    path = folder(cache_dir) / "gather.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
