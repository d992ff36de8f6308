"""The model a local server said it serves, remembered beside the cache.

Without ``--evals-model`` a local endpoint's requests name the server's own model (from
``GET /models``), and so do their cache keys. A rerun while the server is down would
otherwise fall back to the default name, and every cached answer would be missed: the
run that the cache could answer in full fails instead. So the name each answer gave is
kept in ``<cache dir>/endpoint_models.json``, keyed by the endpoint's URL (without
credentials or query), and used, said as such, when the server does not answer.

Best effort: a cache directory that cannot be written, or a file that cannot be read,
only means nothing is remembered (the default name is used, as before).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from pytest_evals.llm.endpoint_probe import EndpointInfo
    from pytest_evals.llm.settings import LLMSettings

FILE_NAME = "endpoint_models.json"


def endpoint_key(base_url: str) -> str:
    """The URL without credentials, query or trailing slash: nothing secret on disk."""
    parts = urlsplit(base_url.strip())
    host = (parts.hostname or "").lower()
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme.lower(), host, parts.path.rstrip("/"), "", ""))


def _read(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str) and v}


def recall(cache_dir: Path, base_url: str) -> str | None:
    """The model the server at ``base_url`` last said it serves (None: never seen)."""
    return _read(Path(cache_dir) / FILE_NAME).get(endpoint_key(base_url))


def remember(cache_dir: Path, base_url: str, model: str) -> None:
    """Keep ``model`` for ``base_url`` (a no-op when it is already kept). Written to a
    temporary file and renamed: xdist workers may write at the same time."""
    path = Path(cache_dir) / FILE_NAME
    key = endpoint_key(base_url)
    data = _read(path)
    if data.get(key) == model:
        return
    data[key] = model
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".endpoint_models.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def own_model(settings: LLMSettings, info: EndpointInfo) -> tuple[str, str] | None:
    """For a local endpoint without ``--evals-model``: (the model to name, where it came
    from: ``server`` when the server just said it, ``remembered`` when it did not answer
    and an earlier run's answer is kept). None: nothing to change."""
    if not settings.serves_own_model:
        return None
    if info.models:
        if settings.cache:
            remember(settings.cache_dir, settings.base_url, info.models[0])
        return info.models[0], "server"
    if info.reachable or not settings.cache:
        return None  # it answered without a model list: nothing better than the default
    kept = recall(settings.cache_dir, settings.base_url)
    return (kept, "remembered") if kept else None
