"""Fetch the official HaluEval files into a data directory.

Files come from the official repository's raw URLs at a pinned commit and are checked
against their known sha256 (when downloading that commit), so a user's copy is
byte-identical to the one the documentation's figures were measured on. Writes are
atomic: an interrupted download never leaves a truncated file behind.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_evals.families.halueval.layout import (
    GENERAL_V1_COMMIT,
    GENERAL_V1_LOCAL,
    OFFICIAL_COMMIT,
    OFFICIAL_FILES,
    OFFICIAL_REPO,
    SHA256,
)

DEFAULT_BASE_URL = f"https://raw.githubusercontent.com/{OFFICIAL_REPO}"
CHUNK = 1 << 20


class DownloadError(Exception):
    pass


@dataclass(frozen=True)
class Planned:
    local: str  # path relative to the destination
    url: str
    sha256: str | None


def plan(
    base_url: str = DEFAULT_BASE_URL,
    ref: str = OFFICIAL_COMMIT,
    with_general_v1: bool = False,
    verify: bool | None = None,
) -> list[Planned]:
    """What to fetch: ``{base_url}/{ref}/{path in the repository}`` per file.

    Checksums are checked by default only for the pinned official commit (a fork or
    another ref may legitimately differ); ``verify`` forces either way.
    """
    base = base_url.rstrip("/")
    check = (ref == OFFICIAL_COMMIT) if verify is None else verify
    out = [
        Planned(local, f"{base}/{ref}/{remote}", SHA256.get(local) if check else None)
        for local, remote in OFFICIAL_FILES.items()
    ]
    if with_general_v1:
        v1_check = True if verify is None else verify
        out.append(
            Planned(
                GENERAL_V1_LOCAL,
                f"{base}/{GENERAL_V1_COMMIT}/data/general_data.json",
                SHA256[GENERAL_V1_LOCAL] if v1_check else None,
            )
        )
    return out


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(item: Planned, dest: Path, timeout: float = 60.0) -> int:
    """Download one file atomically; return its size. DownloadError on any problem."""
    target = dest / item.local
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    size = 0
    try:
        request = urllib.request.Request(item.url, headers={"User-Agent": "pytest-evals"})
        with urllib.request.urlopen(request, timeout=timeout) as resp, tmp.open("wb") as out:
            for block in iter(lambda: resp.read(CHUNK), b""):
                out.write(block)
                digest.update(block)
                size += len(block)
    except urllib.error.HTTPError as exc:
        tmp.unlink(missing_ok=True)
        raise DownloadError(f"{item.url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        tmp.unlink(missing_ok=True)
        reason = getattr(exc, "reason", exc)
        raise DownloadError(f"{item.url}: {reason}") from None
    if item.sha256 is not None and digest.hexdigest() != item.sha256:
        tmp.unlink(missing_ok=True)
        raise DownloadError(
            f"{item.url}: sha256 {digest.hexdigest()} does not match the official file "
            f"({item.sha256}); nothing was written to {target}"
        )
    os.replace(tmp, target)
    return size


def download(
    dest: Path,
    items: list[Planned],
    *,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> list[Path]:
    """Fetch every planned file missing from ``dest`` (or all with ``force``)."""
    written: list[Path] = []
    for item in items:
        target = dest / item.local
        if target.exists() and not force:
            if item.sha256 is None or sha256_of(target) == item.sha256:
                log(f"up to date  {target}")
                continue
            log(f"checksum differs, fetching again  {target}")
        size = fetch(item, dest)
        log(f"downloaded  {target} ({size:,} bytes)")
        written.append(target)
    return written
