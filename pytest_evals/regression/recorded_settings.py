"""What besides its inputs decided a suite's results, recorded per suite (the summary's
``settings``) and compared with a baseline's.

A suite records its task's :meth:`~pytest_evals.tasks.task_contract.Task.run_settings`
(the target when it generates, models and temperatures its configuration names) and,
when any of its cases asked a model (requests or cache hits), the session's model
settings: model, endpoint (without credentials or query) and temperature. A suite
whose cases asked no model (saved outputs, an offline judge) records no model, so a
machine with an API key and one without record the same. Values under keys that look
like secrets are masked before anything is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from pytest_evals.model.case_result import CaseResult
    from pytest_evals.tasks.task_contract import Task

#: Words of a key (split at anything but letters and digits) that mark a secret.
_SECRET_WORDS = frozenset({"key", "apikey", "secret", "token", "password", "authorization", "auth", "header",
                           "headers", "cookie", "credentials"})
_WORD = re.compile(r"[a-z0-9]+")
MASK = "***"
#: Changes named in a message before "and N more" (all are in the JSON).
SHOWN_CHANGES = 5


def masked(value: Any) -> Any:
    """``value`` with every entry under a secret-looking key replaced by ``***``."""
    if isinstance(value, Mapping):
        return {str(k): MASK if _SECRET_WORDS.intersection(_WORD.findall(str(k).lower())) else masked(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [masked(v) for v in value]
    return value


def asked_a_model(results: Sequence[CaseResult]) -> bool:
    return any(r.usage.get("requests") or r.usage.get("cache_hits") for r in results)


def model_settings(config: pytest.Config) -> dict[str, Any]:
    """The session's model settings, as safe to show."""
    from pytest_evals.llm import get_settings
    from pytest_evals.llm.client import display_url

    s = get_settings(config)
    return {"model": s.model, "base_url": None if s.offline else display_url(s.base_url),
            "temperature": s.temperature, "offline": s.offline}


def suite_settings(config: pytest.Config, task: Task[Any], results: Sequence[CaseResult]) -> dict[str, Any]:
    """The suite's ``settings`` section."""
    out: dict[str, Any] = dict(task.run_settings())
    if asked_a_model(results):
        out["llm"] = model_settings(config)
    # Through JSON once: the comparison with a baseline read back from a file sees the
    # same types (tuples as lists, keys as text).
    return json.loads(json.dumps(masked(out), default=str))


def _leaves(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping) and value:
        for k, v in value.items():
            _leaves(v, f"{prefix}.{k}" if prefix else str(k), out)
    else:
        out[prefix] = value


def _text(value: Any) -> str:
    return "(none)" if value is None else json.dumps(value, default=str)[:80]


def setting_changes(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """``llm.model: "a" -> "b"`` per setting that differs (absent = none)."""
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    _leaves(baseline, "", before)
    _leaves(current, "", after)
    changes = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            changes.append(f"{key}: {_text(before.get(key))} -> {_text(after.get(key))}")
    return changes


def shown_changes(changes: Sequence[str]) -> str:
    text = "; ".join(changes[:SHOWN_CHANGES])
    return text + (f" and {len(changes) - SHOWN_CHANGES} more" if len(changes) > SHOWN_CHANGES else "")
