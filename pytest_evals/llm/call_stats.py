"""Process-wide LLM usage totals; summed across xdist workers on the controller."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass
class LLMStats:
    #: Requests answered by the endpoint (what is paid for).
    requests: int = 0
    #: HTTP attempts, including retries and failed ones.
    attempts: int = 0
    retries: int = 0
    #: Attempts refused with 429 (or 503/529 "overloaded").
    throttled: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    #: Identical requests that waited for one in flight (this process or another).
    shared: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    #: Answered requests whose model has no known price (their cost is not in cost_usd).
    unpriced_requests: int = 0
    #: What the cache hits would have cost (at their original token counts).
    saved_usd: float = 0.0
    #: Requests that failed after their retries (each made one case an ERROR).
    errors: int = 0
    dry_run_requests: int = 0
    dry_run_prompt_tokens: int = 0
    dry_run_completion_tokens: int = 0
    dry_run_cost_usd: float = 0.0
    #: Requests sent again because the endpoint was down when they went (a server
    #: restarting: not counted as retries, see endpoint_gate.py).
    outage_resends: int = 0
    #: Requests that failed because the endpoint stayed unreachable past its bound
    #: (also in ``errors``), and that one-line reason (the first process's, on a merge).
    unreachable: int = 0
    unreachable_reason: str = ""
    #: Lowest concurrency the adaptive limiter went down to: the configured one (or the
    #: server's slots) when nothing was throttled; 0 only when no request went out.
    lowest_concurrency: int = 0
    peak_in_flight: int = 0
    #: HTTP helper processes started (the process transport; one per xdist worker,
    #: more if one died and was replaced).
    helper_processes: int = 0

    def add(self, other: LLMStats) -> None:
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if f.name == "unreachable_reason":
                setattr(self, f.name, mine or theirs)
            elif f.name == "lowest_concurrency":
                values = [v for v in (mine, theirs) if v]
                setattr(self, f.name, min(values) if values else 0)
            else:
                # peak_in_flight too: workers run side by side, their peaks add up.
                setattr(self, f.name, mine + theirs)

    @property
    def active(self) -> bool:
        return bool(
            self.requests
            or self.cache_hits
            or self.errors
            or self.dry_run_requests
            or self.attempts
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["cost_usd"] = round(self.cost_usd, 6)
        data["saved_usd"] = round(self.saved_usd, 6)
        data["dry_run_cost_usd"] = round(self.dry_run_cost_usd, 6)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LLMStats:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
