"""The response cache's writes, applied by the process transport's helper.

With a response cache, the helper process opens the same cache directory and applies
this process's claims, stores and releases (CACHE frames on the transport's pipe):
their SQLite transactions were 27% of the engine thread's samples, and there they run
on the other core (docs/llm.md, "Transport"). :class:`HelperCacheOps` is this process's
side, a :class:`~pytest_evals.llm.cache.CacheOps` that the process transport owns and
the client asks for (``transport.cache_ops``); :class:`CacheApplier` is the helper's
side. Claims are then the helper's (its pid): a helper that dies leaves them stale, so
they are taken over at once. Reads stay in this process (a hit needs no round trip).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from pytest_evals.llm.cache import Lookup, ResponseCache, note_problem, problems
from pytest_evals.llm.transport.pipe_frames import CACHE


class Channel(Protocol):
    """The helper's pipe, as the process transport offers it."""

    async def ask(self, kind: int, payload: Any) -> Any:
        """Send a frame and wait for the reply's payload (AttemptError: no helper)."""

    def tell(self, kind: int, payload: Any) -> None:
        """Send a frame nobody waits for (dropped when no helper runs)."""


def helper_spec(cache: ResponseCache) -> dict[str, Any]:
    """What the helper needs to open the same cache (sent in the SETUP frame)."""
    return {
        "root": str(cache.root),
        "run_id": cache.run_id,
        "refresh": cache.refresh,
        "claim_ttl": cache.claim_ttl,
    }


class HelperCacheOps:
    """Claims and stores sent to the helper (see ResponseCache for their meaning).

    The awaited operations raise AttemptError when the helper is unavailable: the client
    then uses this process's own ResponseCache on the same directory.
    """

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    async def _ask(self, op: str, namespace: str, key: str, value: Any = None) -> Any:
        result, noted = await self._channel.ask(CACHE, [op, namespace, key, value])
        # The helper's cache problems are shown by this process's terminal summary.
        for text in noted:
            note_problem(str(text))
        return result

    async def lookup_or_claim(self, namespace: str, key: str) -> tuple[Lookup, Any]:
        status, value = await self._ask("claim", namespace, key)
        return status, value

    async def store(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        await self._ask("store", namespace, key, value)

    def release(self, namespace: str, key: str) -> None:
        """Drop the claim, without waiting; a helper that is gone left it stale anyway."""
        self._channel.tell(CACHE, ["release", namespace, key, None])


class CacheApplier:
    """The helper's side: applies each CACHE frame's operation to its ResponseCache."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.cache = ResponseCache(
            Path(spec["root"]),
            run_id=spec["run_id"],
            refresh=spec["refresh"],
            claim_ttl=spec["claim_ttl"],
        )
        self._told = 0  # problems already sent to the parent

    async def apply(self, op: str, namespace: str, key: str, value: Any) -> Any:
        cache = self.cache
        if op == "claim":
            status, found = await cache.lookup_or_claim(namespace, key)
            return [status, found if status == "hit" else None]
        if op == "store":
            await cache.store(namespace, key, value)
            return None
        if op == "release":
            cache.release(namespace, key)
            return None
        raise ValueError(f"unknown cache operation {op!r}")

    def reply(self, result: Any) -> list[Any]:
        """The reply's payload: the result and the cache problems not yet reported."""
        noted = problems()
        news, self._told = noted[self._told :], len(noted)
        return [result, news]

    def close(self) -> None:
        self.cache.close()
