"""The red-team store of a run, written by the controller from the cases' results.

Each scored attack travels in its case result's details (attack, system prompt, seed,
meta, run path); the baseline's attacks travel as a :class:`StoreRecord` from the one
process that computed them. At the end of the run the controller groups them by file
(``<run>/seed_<id>/<hash>.json``) and merges each group into its file once, in a fixed
order (baseline first, then cases by suite and index), so a plain run and ``-n 2``
write the same content.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

#: The task name whose results carry attacks.
TASK = "redteam"


@dataclass
class StoreRecord:
    """Attacks for one system prompt file, plus the meta the file keeps (plain JSON data)."""

    run_path: str
    seed_id: str
    system_prompt: str
    attacks: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StoreRecord:
        return cls(
            run_path=str(data["run_path"]),
            seed_id=str(data["seed_id"]),
            system_prompt=str(data["system_prompt"]),
            attacks=list(data.get("attacks") or []),
            meta=dict(data.get("meta") or {}),
        )

    @property
    def key(self) -> tuple[str, str, str]:
        return self.run_path, self.seed_id, self.system_prompt


def case_record(result: Mapping[str, Any]) -> StoreRecord | None:
    """The record of one case result (its JSON form, details included); None if it wrote nothing."""
    if result.get("task") != TASK or result.get("status") not in ("passed", "failed"):
        return None
    details = result.get("details") or {}
    run_path, attack = details.get("run_path"), details.get("attack")
    if not run_path or not isinstance(attack, Mapping):
        return None
    return StoreRecord(
        run_path=str(run_path),
        seed_id=str((result.get("data") or {}).get("seed_id", 0)),
        system_prompt=str(details.get("system_prompt", attack.get("system", ""))),
        attacks=[dict(attack)],
        meta=dict(details.get("meta") or {}),
    )


def case_records(results: Iterable[Mapping[str, Any]]) -> list[StoreRecord]:
    """Records of the cases, by suite and case index (arrival order differs under xdist)."""
    keyed = []
    for result in results:
        record = case_record(result)
        if record is not None:
            keyed.append(((str(result.get("suite", "")), int(result.get("index", 0))), record))
    keyed.sort(key=lambda pair: pair[0])
    return [record for _, record in keyed]


def group(records: Iterable[StoreRecord]) -> list[StoreRecord]:
    """One record per file: attacks in order, the last record's meta (as the last write won)."""
    merged: dict[tuple[str, str, str], StoreRecord] = {}
    for record in records:
        into = merged.get(record.key)
        if into is None:
            merged[record.key] = StoreRecord(record.run_path, record.seed_id, record.system_prompt, list(record.attacks), dict(record.meta))
        else:
            into.attacks.extend(record.attacks)
            into.meta = dict(record.meta)
    return list(merged.values())


@dataclass
class StoreWritten:
    """What the writer did: run folders written, and files it could not write (with why)."""

    run_paths: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def write_store(records: Iterable[StoreRecord]) -> StoreWritten:
    """Merge every file's attacks into it; a file that cannot be written is reported, and
    the others are still written."""
    from pytest_evals.families.redteam.store import merge_system_prompt_attacks

    out = StoreWritten()
    for record in group(records):
        try:
            merge_system_prompt_attacks(record.run_path, record.seed_id, record.system_prompt, record.attacks, record.meta)
        except (OSError, ValueError) as exc:
            out.errors.append(f"could not write the run under {record.run_path} (seed {record.seed_id}): {exc}")
            continue
        if record.run_path not in out.run_paths:
            out.run_paths.append(record.run_path)
    return out
