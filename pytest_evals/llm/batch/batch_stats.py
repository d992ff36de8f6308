"""What batch mode did in one process (summed over xdist workers on the controller)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class BatchStats:
    #: Gather -> batch -> fill rounds that submitted (or re-attached to) something.
    rounds: int = 0
    batches: int = 0
    #: Batches of an earlier, killed run that this run re-attached to.
    reattached: int = 0
    lines: int = 0
    completed: int = 0
    #: Lines in error files (each try counts; retried lines may succeed later).
    failed_lines: int = 0
    #: Lines that never got an answer: their cases are ERRORs.
    given_up: int = 0
    #: Failed lines sent again interactively (--evals-batch-retry live).
    retried_live: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    #: What the same answers cost at interactive prices.
    interactive_cost_usd: float = 0.0
    unpriced: int = 0
    wait_seconds: float = 0.0
    #: Dry run: requests that would be batched, their estimated tokens and batch cost.
    dry_run_requests: int = 0
    dry_run_batches: int = 0
    dry_run_prompt_tokens: int = 0
    dry_run_completion_tokens: int = 0
    dry_run_cost_usd: float = 0.0
    #: Batches that ended expired, cancelled or failed, with what they completed.
    incidents: list[str] = field(default_factory=list)

    def add(self, other: BatchStats) -> None:
        for f in fields(self):
            if f.name == "rounds":
                # Workers of a run share one gathering (the first one does it).
                self.rounds = max(self.rounds, other.rounds)
            else:
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    @property
    def active(self) -> bool:
        return bool(self.rounds or self.dry_run_requests or self.batches)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("cost_usd", "interactive_cost_usd", "dry_run_cost_usd"):
            data[name] = round(data[name], 6)
        data["wait_seconds"] = round(self.wait_seconds, 3)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BatchStats:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
