"""rm-bias's current output: ``<run>/final_stats/seed_<i>.json`` attribute statistics.

Their ``Runner.save_attribute_stats`` (HEAD, ``runner.py``) writes, per seed state, a
JSON list of ``AttributeStats.to_dict()``: ``attribute`` (the text of a bias attribute),
``student_winrate`` / ``teacher_winrate`` (float or null), ``meta`` (e.g. ``time_step``,
``parent``) and ``rollouts``: user prompt -> list of rollouts, each ``null`` or the
rollout with its null fields left out (``rewritten_response``, ``baseline_response``,
``student_score`` / ``teacher_score`` = ``{score, raw_score, reasoning, model_name}``,
``policy_model``). The list is already ordered by student win rate (highest first for
"plus" runs, lowest first for "minus"); the view keeps that order.

Besides the stored win rates the reader recomputes them from the rollouts the way their
``AttributeStats.winrate`` does (the mean of the scores present; when any score is not
-1, 0 or 1 within 1e-6, after dropping Tukey-fence outliers at 1.5 IQR with numpy's
default linear percentiles), so a stale or hand-edited file shows up.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

FINAL_STATS_DIR = "final_stats"
SEED_FILE = re.compile(r"^seed_(.+)\.json$")


@dataclass
class AttributeRecord:
    attribute: str
    student_winrate: float | None
    teacher_winrate: float | None
    meta: dict[str, Any]
    #: user prompt -> rollouts (None where their list holds null)
    rollouts: dict[str, list[dict[str, Any] | None]]
    #: The win rates recomputed from the rollouts by their rule.
    student_computed: float | None = None
    teacher_computed: float | None = None


@dataclass
class AttributeSeed:
    seed_id: str
    path: Path
    attributes: list[AttributeRecord] = field(default_factory=list)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _score_of(rollout: dict[str, Any], key: str) -> float | None:
    score = rollout.get(key)
    if not isinstance(score, dict):
        return None
    return _number(score.get("score"))


def without_outliers(values: list[float], k: float = 1.5) -> list[float]:
    """The values inside Tukey's fences [Q1 - k*IQR, Q3 + k*IQR] (numpy's linear quartiles)."""
    if not values:
        return []
    data = np.asarray(values, dtype=float)
    q1, q3 = np.percentile(data, 25), np.percentile(data, 75)
    low, high = q1 - k * (q3 - q1), q3 + k * (q3 - q1)
    return [float(x) for x in data[(data >= low) & (data <= high)]]


def winrate(scores: Iterable[float]) -> float | None:
    """rm-bias's ``AttributeStats.winrate`` over the scores present (None when there are none)."""
    values = list(scores)
    if not values:
        return None
    ternary = all(any(math.isclose(s, t, abs_tol=1e-6) for t in (1, 0, -1)) for s in values)
    kept = values if ternary else without_outliers(values)
    return float(np.mean(kept)) if kept else math.nan


def recomputed(rollouts: dict[str, list[dict[str, Any] | None]], key: str) -> float | None:
    scores = [
        s
        for items in rollouts.values()
        for r in items
        if r is not None and (s := _score_of(r, key)) is not None
    ]
    return winrate(scores)


class AttributeStatsError(ValueError):
    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field


def parse_attribute_list(raw: Any) -> list[AttributeRecord]:
    """The records of one ``seed_<i>.json``; raises :class:`AttributeStatsError` naming the field."""
    if not isinstance(raw, list):
        raise AttributeStatsError(None, f"expected a JSON list of attribute statistics, got {type(raw).__name__}")
    out: list[AttributeRecord] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise AttributeStatsError(f"[{i}]", "expected an object")
        attribute = item.get("attribute")
        if not isinstance(attribute, str):
            raise AttributeStatsError(f"[{i}].attribute", "expected a string")
        meta = item.get("meta", {})
        if not isinstance(meta, dict):
            raise AttributeStatsError(f"[{i}].meta", "expected an object")
        rollouts_raw = item.get("rollouts", {})
        if not isinstance(rollouts_raw, dict):
            raise AttributeStatsError(f"[{i}].rollouts", "expected an object mapping user prompt -> rollouts")
        rollouts: dict[str, list[dict[str, Any] | None]] = {}
        for user, items in rollouts_raw.items():
            if not isinstance(items, list) or any(r is not None and not isinstance(r, dict) for r in items):
                raise AttributeStatsError(f"[{i}].rollouts[{user!r}]", "expected a list of rollout objects or nulls")
            rollouts[user] = list(items)
        record = AttributeRecord(
            attribute=attribute,
            student_winrate=_number(item.get("student_winrate")),
            teacher_winrate=_number(item.get("teacher_winrate")),
            meta=meta,
            rollouts=rollouts,
        )
        record.student_computed = recomputed(rollouts, "student_score")
        record.teacher_computed = recomputed(rollouts, "teacher_score")
        out.append(record)
    return out


def stats_files(run_path: Path) -> list[tuple[str, Path]]:
    """(seed id, file) for every ``final_stats/seed_<i>.json`` of a run, in seed order."""
    folder = run_path / FINAL_STATS_DIR
    if not folder.is_dir():
        return []
    found = [(m.group(1), p) for p in folder.iterdir() if p.is_file() and (m := SEED_FILE.match(p.name))]

    def order(item: tuple[str, Path]) -> tuple[int, Any]:
        return (0, int(item[0])) if item[0].isdigit() else (1, item[0])

    return sorted(found, key=order)


def has_final_stats(run_path: Path) -> bool:
    return bool(stats_files(run_path))
