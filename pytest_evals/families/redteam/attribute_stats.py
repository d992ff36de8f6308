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
    # Scores near the float limit overflow in the quartiles or the mean; the result is
    # then infinite or NaN (shown as N/A), as in their numpy, and no RuntimeWarning ends a
    # run that treats warnings as errors.
    with np.errstate(over="ignore", invalid="ignore"):
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


def _is_number(value: Any) -> bool:
    # JSON numbers only: their writer stores floats (or NaN, which Python's json writes) and
    # null; a bool or a number written as text is not a score their code could have written.
    return isinstance(value, int | float) and not isinstance(value, bool)


def _optional_number(obj: dict[str, Any], key: str, where: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if not _is_number(value):
        raise AttributeStatsError(f"{where}.{key}", f"expected a number or null, got {type(value).__name__} {value!r:.40}")
    try:
        number = float(value)
    except OverflowError:
        # json.loads keeps an integer literal exact, so 1e400 written without the exponent
        # arrives as an int that no float (and no score of theirs) can hold.
        raise AttributeStatsError(f"{where}.{key}", "number out of range: an integer beyond the range of a float") from None
    if math.isinf(number):
        # Their json.dump writes NaN for a mean over a NaN score (read as N/A), but no mean
        # or score of theirs is infinite: Infinity is a bad value, not a missing one.
        raise AttributeStatsError(f"{where}.{key}", f"expected a finite number, NaN or null, got {value!r}")
    return number


def _optional_text(obj: dict[str, Any], key: str, where: str) -> None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise AttributeStatsError(f"{where}.{key}", f"expected a string, got {type(value).__name__}")


def _check_score(rollout: dict[str, Any], key: str, where: str, required: bool) -> None:
    """A ``RewriteScore`` as ``asdict_no_none`` writes it: ``{score?, raw_score?, reasoning?, model_name}``."""
    score = rollout.get(key)
    if score is None:
        if required:
            raise AttributeStatsError(f"{where}.{key}", "field required (their Rollout always has a student_score)")
        return
    if not isinstance(score, dict):
        raise AttributeStatsError(f"{where}.{key}", f"expected an object, got {type(score).__name__}")
    _optional_number(score, "score", f"{where}.{key}")
    _optional_number(score, "raw_score", f"{where}.{key}")
    _optional_text(score, "reasoning", f"{where}.{key}")
    # Their writer always writes the model name and their reader (evo.py resuming from a
    # step's stats) needs it; ``score`` may be absent (``asdict_no_none`` drops a None).
    if not isinstance(score.get("model_name"), str):
        raise AttributeStatsError(f"{where}.{key}.model_name", "field required (a string)")


def _check_rollout(rollout: Any, where: str) -> dict[str, Any] | None:
    """One entry of a user prompt's list: null (a failed rollout) or their ``Rollout``."""
    if rollout is None:
        return None
    if not isinstance(rollout, dict):
        raise AttributeStatsError(where, f"expected a rollout object or null, got {type(rollout).__name__}")
    for key in ("rewritten_response", "baseline_response"):
        if key not in rollout:
            raise AttributeStatsError(f"{where}.{key}", "field required")
        _optional_text(rollout, key, where)
    _check_score(rollout, "student_score", where, required=True)
    _check_score(rollout, "teacher_score", where, required=False)
    _optional_text(rollout, "policy_model", where)
    return rollout


def parse_attribute_list(raw: Any) -> list[AttributeRecord]:
    """The records of one ``seed_<i>.json``; raises :class:`AttributeStatsError` naming the field.

    The shape is checked as far as their dataclasses fix it (``attribute`` text, win rates
    numbers or null, ``meta`` an object, each rollout null or an object with both responses
    and a ``student_score``, scores numbers or null); keys they might add later are kept.
    """
    if not isinstance(raw, list):
        raise AttributeStatsError(None, f"expected a JSON list of attribute statistics, got {type(raw).__name__}")
    out: list[AttributeRecord] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise AttributeStatsError(f"[{i}]", f"expected an object, got {type(item).__name__}")
        attribute = item.get("attribute")
        if not isinstance(attribute, str):
            raise AttributeStatsError(f"[{i}].attribute", f"expected a string, got {type(attribute).__name__}")
        meta = item.get("meta", {})
        if not isinstance(meta, dict):
            raise AttributeStatsError(f"[{i}].meta", f"expected an object, got {type(meta).__name__}")
        rollouts_raw = item.get("rollouts", {})
        if not isinstance(rollouts_raw, dict):
            raise AttributeStatsError(f"[{i}].rollouts", "expected an object mapping user prompt -> rollouts")
        rollouts: dict[str, list[dict[str, Any] | None]] = {}
        for user, items in rollouts_raw.items():
            where = f"[{i}].rollouts[{user!r:.60}]"
            if not isinstance(items, list):
                raise AttributeStatsError(where, f"expected a list of rollouts, got {type(items).__name__}")
            rollouts[user] = [_check_rollout(r, f"{where}[{j}]") for j, r in enumerate(items)]
        record = AttributeRecord(
            attribute=attribute,
            student_winrate=_optional_number(item, "student_winrate", f"[{i}]"),
            teacher_winrate=_optional_number(item, "teacher_winrate", f"[{i}]"),
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
    # Anything but a folder: a FIFO or a device named seed_1.json is refused by the reader
    # with its reason, rather than left out without a word.
    found = [(m.group(1), p) for p in folder.iterdir() if not p.is_dir() and (m := SEED_FILE.match(p.name))]

    def order(item: tuple[str, Path]) -> tuple[int, Any]:
        return (0, int(item[0])) if item[0].isdigit() else (1, item[0])

    return sorted(found, key=order)


def has_final_stats(run_path: Path) -> bool:
    return bool(stats_files(run_path))
