"""Writing a run in the seed's layout: ``<run>/seed_<id>/<md5>.json`` and friends.

Every write goes through the run's one atomic writer (a uniquely named temporary file
renamed over the destination, secrets masked), so a reader (the viewer, a later run)
sees the old file or the new one, never half of one. Read-modify-write updates (population
history, merging attacks into a system prompt file) hold an advisory lock on the seed
directory, so concurrent processes cannot lose each other's updates.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pytest_evals.families.redteam.convert import (
    attack_to_dict,
    convert_attack_to_dict,
    hash_system_prompt,
    scored_attack,
    to_attack,
    validate_meta,
    validate_stats,
)
from pytest_evals.families.redteam.schema import CLUSTER_INFO_FILE, POPULATION_FILE, dump
from pytest_evals.families.redteam.scoring import compute_adversarial_score
from pytest_evals.output import strict_json as strictjson
from pytest_evals.suites.json_files import read_json_file

LOCK_FILE = ".lock"
#: cluster_info.json keeps this many sample prompts, as rm-bias's save_cluster_info does.
SAMPLE_PROMPTS_KEPT = 10


def seed_dir(run_path: str | os.PathLike[str], seed_id: int | str) -> Path:
    """``<run>/seed_<id>``; an id that would leave the run directory is refused."""
    text = str(seed_id)
    if not text or "/" in text or "\\" in text or text in (".", "..") or "\0" in text:
        raise ValueError(f"seed id {text!r} cannot be a directory name (no slashes, not '.' or '..')")
    return Path(run_path) / f"seed_{text}"


def atomic_write_text(path: Path, text: str, durable: bool = True) -> None:
    """UTF-8 text written with the run's one atomic writer (:func:`pytest_evals.output.artifacts.atomic_write`).

    ``durable=False`` skips the fsync: readers still never see half a file, but a power
    cut may leave an empty one (fine for throw-away data such as benchmark fixtures).
    """
    from pytest_evals.output.artifacts import atomic_write

    atomic_write(path, text, durable=durable)


def atomic_write_json(path: Path, data: Any, durable: bool = True) -> None:
    """UTF-8 JSON, indent 2, written atomically."""
    # Serialise first (strict JSON: NaN as null, lone surrogates escaped, known secrets
    # masked), so a value that cannot be written never leaves a temporary file.
    text = strictjson.dumps(data, indent=2) + "\n"
    atomic_write_text(path, text, durable)


@contextlib.contextmanager
def seed_lock(directory: Path) -> Iterator[None]:
    """An exclusive advisory lock on a seed directory (a no-op where fcntl is missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: callers must not write concurrently
        yield
        return
    with open(directory / LOCK_FILE, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


#: rm-bias's ``save_system_prompt_stats`` default for ``meta`` (read-only, so it can be shared).
EMPTY_META: Mapping[str, Any] = MappingProxyType({})


def adversarial_scores(attacks: Iterable[Mapping[str, Any]]) -> list[float]:
    """Scores of the attacks that have one, computed from their ratings ("average" rule)."""
    scores = []
    for data in attacks:
        score = compute_adversarial_score(to_attack(data), "average")
        if score is not None:
            scores.append(float(score))
    return scores


def build_stats(
    system_prompt: str,
    attacks: Iterable[Any],
    meta: Mapping[str, Any] = EMPTY_META,
    mean_score: float | None = None,
    stdev_score: float | None = None,
) -> dict[str, Any]:
    """A system prompt file's content, as rm-bias's ``save_system_prompt_stats`` builds it.

    Attack dicts are written as given (after validation), other attacks through
    :func:`convert_attack_to_dict`. A missing mean/stdev is the mean / population std
    of the attacks' adversarial scores, and 0.0 when no attack has one (rm-bias writes
    0.0 there; readers of this package recompute from the attacks and show N/A).
    """
    if not isinstance(system_prompt, str):
        raise ValueError(f"invalid system prompt stats: field 'system_prompt': expected a string, got {type(system_prompt).__name__}")
    meta_dict = validate_meta(meta)
    dicts: list[dict[str, Any]] = []
    for i, attack in enumerate(attacks):
        try:
            data = convert_attack_to_dict(attack)
            to_attack(data)  # a clear error now rather than a file the reader must skip
        except ValueError as exc:
            raise ValueError(f"attacks[{i}]: {exc}") from None
        dicts.append(dict(data))
    scores = adversarial_scores(dicts)
    if mean_score is None:
        mean_score = sum(scores) / len(scores) if scores else 0.0
    if stdev_score is None:
        m = mean_score
        stdev_score = math.sqrt(sum((x - m) ** 2 for x in scores) / len(scores)) if scores else 0.0
    for key, value in (("mean_score", mean_score), ("stdev_score", stdev_score)):
        if not math.isfinite(value):
            raise ValueError(f"invalid system prompt stats: field {key!r} is not finite ({value})")
    return {
        "system_prompt": system_prompt,
        "meta": meta_dict,
        "mean_score": float(mean_score),
        "stdev_score": float(stdev_score),
        "attacks": dicts,
    }


def save_system_prompt_stats(
    run_path: str | os.PathLike[str],
    seed_id: int | str,
    system_prompt: str,
    attacks: Iterable[Any] = (),
    mean_score: float | None = None,
    stdev_score: float | None = None,
    meta: Mapping[str, Any] = EMPTY_META,
) -> str:
    """Write ``seed_<seed_id>/<hash>.json`` (replacing it); returns the hash.

    Same parameters, defaults and file content as rm-bias's ``viz_utils`` helper.
    """
    data = build_stats(system_prompt, attacks, meta, mean_score, stdev_score)
    prompt_hash = hash_system_prompt(system_prompt)
    atomic_write_json(seed_dir(run_path, seed_id) / f"{prompt_hash}.json", data)
    return prompt_hash


def merge_system_prompt_attacks(
    run_path: str | os.PathLike[str],
    seed_id: int | str,
    system_prompt: str,
    attacks: Iterable[Any],
    meta: Mapping[str, Any],
) -> str:
    """Add or replace attacks (keyed by (system, user)) in a system prompt file, under the seed lock.

    Attacks already in the file and not given here are kept; mean/stdev are recomputed.
    An unreadable existing file is an error rather than something silently overwritten.
    """
    directory = seed_dir(run_path, seed_id)
    prompt_hash = hash_system_prompt(system_prompt)
    path = directory / f"{prompt_hash}.json"
    new = [attack_to_dict(scored_attack(a)) for a in attacks]
    with seed_lock(directory):
        merged: dict[tuple[str, str], dict[str, Any]] = {}
        if path.exists():
            try:
                existing = validate_stats(read_json_file(path))
            except (ValueError, UnicodeDecodeError) as exc:
                raise ValueError(f"{path}: cannot merge into an unreadable file: {exc}") from None
            for attack in existing.attacks:
                merged[(attack.system, attack.user)] = dump(attack)
        for attack_dict in new:
            merged[(attack_dict["system"], attack_dict["user"])] = attack_dict
        data = build_stats(system_prompt, merged.values(), meta)
        atomic_write_json(path, data)
    return prompt_hash


def save_cluster_info(
    run_path: str | os.PathLike[str],
    seed_id: int | str,
    summary: str,
    train_batch_size: int,
    sample_train_prompts: Iterable[str],
) -> None:
    """Write ``seed_<seed_id>/cluster_info.json``."""
    data = {
        "summary": summary,
        "train_batch_size": train_batch_size,
        # rm-bias keeps the first 10 (the file is a summary, not the training set).
        "sample_train_prompts": list(sample_train_prompts)[:SAMPLE_PROMPTS_KEPT],
    }
    atomic_write_json(seed_dir(run_path, seed_id) / CLUSTER_INFO_FILE, data)


def save_population_state(
    run_path: str | os.PathLike[str],
    seed_id: int | str,
    step: int,
    population_state: Mapping[str, int],
) -> None:
    """Record ``{system_prompt: generation}`` for ``step`` in ``population_history.json``.

    The file maps step -> {hash: generation}; prompts are hashed here. Other steps are
    kept; the step given is replaced.
    """
    directory = seed_dir(run_path, seed_id)
    path = directory / POPULATION_FILE
    with seed_lock(directory):
        history: dict[str, Any] = {}
        if path.exists():
            try:
                history = read_json_file(path)
            except (ValueError, UnicodeDecodeError) as exc:
                raise ValueError(f"{path}: cannot update an unreadable population history: {exc}") from None
            if not isinstance(history, dict):
                raise ValueError(f"{path}: population history must be a JSON object of steps")
        history[str(int(step))] = {
            hash_system_prompt(prompt): int(generation) for prompt, generation in population_state.items()
        }
        ordered = dict(sorted(history.items(), key=lambda kv: _step_key(kv[0])))
        atomic_write_json(path, ordered)


def _step_key(step: str) -> tuple[int, float, str]:
    try:
        return 0, float(step), step
    except ValueError:
        return 1, 0.0, step
