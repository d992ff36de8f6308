"""The response cache: diskcache on disk, one directory per namespace, shared by processes.

Keys are SHA-256 hashes of a request's semantic fields only (see :func:`cache_key`).
Values are the reply text, model and token counts, plus the id of the run that wrote
them (so ``--evals-refresh`` can tell answers re-asked in this run from older ones).

Besides answers the cache holds *claims*: before asking the endpoint a process writes a
claim under the request's key atomically (inside a SQLite transaction), and a process
that finds a live claim waits for the answer instead of asking too. The answer later
replaces the claim in place (one write). A claim carries its owner's pid, host and an
expiry, so a claim left behind by a killed process is taken over at once (dead pid on
this host) or after it expires (another host). Under ``--evals-refresh`` the claim keeps
the answer it displaces, which comes back if the new request fails.

Claims and stores are batched: everything queued during one turn of the event loop is
applied in a single SQLite transaction at the end of that turn, so hundreds of requests
in flight cost a handful of commits rather than one each (about 80 microseconds of CPU
per request in all). This runs on the loop's own thread on purpose: a writer thread
would fight the event loop for the GIL and cost more throughput than it saves. With
the process transport, the helper process applies claims, stores and releases (the
same class, on the same directory: see ``pytest_evals.llm.transport.helper_cache``), so
they cost this process one pipe frame each. Reads are cheap and done inline. Any read
error is a miss; any write error is logged and the run continues without caching that
answer.

Entries are data, never code: tagged JSON in the database row, and anything else found
there (a pickle above all) is a miss, never loaded (see cache_format.py). Every string
of an answer passes the redaction layer before it is stored, whoever stores it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import socket
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pytest_evals.hardening import redaction
from pytest_evals.llm.cache_format import FORMAT_VERSION, IN_ROW, data_disk, settings_problem
from pytest_evals.model.canonical_json import canonical_json

if TYPE_CHECKING:
    import diskcache

log = logging.getLogger("pytest_evals.llm")

#: The ``v`` of every answer: the data format's version (older answers are misses).
VALUE_VERSION = FORMAT_VERSION
_HOST = socket.gethostname()
#: Distinguishes this process from an earlier one that had the same pid.
_PROCESS_TOKEN = uuid.uuid4().hex[:12]

Lookup = Literal["hit", "claimed", "busy"]


class CacheOps(Protocol):
    """Claims and stores: :class:`ResponseCache`, or the process transport's helper
    applying them to the same directory (``pytest_evals.llm.transport.helper_cache``)."""

    async def lookup_or_claim(self, namespace: str, key: str) -> tuple[Lookup, Any]: ...

    async def store(self, namespace: str, key: str, value: dict[str, Any]) -> None: ...

    def release(self, namespace: str, key: str) -> None: ...


#: Problems with the cache this process met, each once: shown in the terminal summary,
#: because a cache that quietly stops working re-pays every answer.
_PROBLEMS: list[str] = []
_problems_lock = threading.Lock()


def note_problem(text: str) -> None:
    log.warning("pytest_evals: %s", text)
    with _problems_lock:
        if text not in _PROBLEMS:
            _PROBLEMS.append(text)


def problems() -> list[str]:
    with _problems_lock:
        return list(_PROBLEMS)


def cache_key(payload: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the request's semantic fields."""
    # Lone surrogates (from data decoded with surrogateescape, or a JSON "\ud800") are
    # written surrogatepass: invalid UTF-8, so no valid string shares their bytes, and
    # every key of valid text is what it was.
    return hashlib.sha256(canonical_json(payload)).hexdigest()


@dataclass(frozen=True)
class Claim:
    pid: int
    host: str
    token: str
    expires: float

    def encode(self) -> str:
        return f"{self.pid}|{self.host}|{self.token}|{self.expires:.3f}"

    @classmethod
    def decode(cls, text: Any) -> Claim | None:
        try:
            pid, host, token, expires = str(text).split("|")
            return cls(int(pid), host, token, float(expires))
        except ValueError:
            return None

    @property
    def mine(self) -> bool:
        return self.pid == os.getpid() and self.host == _HOST and self.token == _PROCESS_TOKEN

    def stale(self, now: float | None = None) -> bool:
        if (now or time.time()) > self.expires:
            return True
        if self.host != _HOST:
            return False
        if self.pid == os.getpid():
            return self.token != _PROCESS_TOKEN
        return not pid_alive(self.pid)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A killed child that nobody reaped yet is a zombie: dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def new_claim(ttl: float) -> Claim:
    return Claim(os.getpid(), _HOST, _PROCESS_TOKEN, time.time() + ttl)


def claim_record(claim: Claim, previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a claimed key holds until its answer arrives."""
    return {"claim": claim.encode(), "previous": previous}


def claim_of(value: Any) -> Claim | None:
    if isinstance(value, dict) and "claim" in value:
        return Claim.decode(value["claim"])
    return None


def is_answer(value: Any) -> bool:
    """An answer of this version with every field a reply is built from, well typed (an
    entry someone else wrote is checked like any input)."""
    return (
        isinstance(value, dict)
        and value.get("v") == VALUE_VERSION
        and isinstance(value.get("text"), str)
        and isinstance(value.get("model"), str)
        and type(value.get("prompt_tokens")) is int
        and type(value.get("completion_tokens")) is int
        and isinstance(value.get("finish_reason"), (str, type(None)))
    )


class ResponseCache:
    """Namespaced diskcache directories under ``root``."""

    def __init__(
        self, root: Path, *, run_id: str, refresh: bool = False, claim_ttl: float = 600.0
    ) -> None:
        self.root = Path(root)
        self.run_id = run_id
        self.refresh = refresh
        self.claim_ttl = claim_ttl
        self._caches: dict[str, diskcache.Cache | ReadOnlyCache | None] = {}
        self._lock = threading.Lock()
        self._batchers: dict[asyncio.AbstractEventLoop, _Batcher] = {}

    # -- namespaces ---------------------------------------------------------------------
    def namespace(self, name: str) -> diskcache.Cache | ReadOnlyCache | None:
        if name in self._caches:
            return self._caches[name]
        with self._lock:
            if name not in self._caches:
                self._caches[name] = self._open(name)
            return self._caches[name]

    def _open(self, name: str) -> diskcache.Cache | ReadOnlyCache | None:
        import diskcache

        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "default"
        path = self.root / safe
        refused = settings_problem(path)
        if refused is not None:
            note_problem(
                f"response cache {path} is not opened ({refused}): every request goes to "
                "the endpoint and nothing is saved"
            )
            return None
        try:
            # Never evict: every entry is an answer somebody paid for. No culling on
            # writes either (it costs queries per write); claims are deleted explicitly.
            # Every setting that changes how entries are read is given here, so the
            # folder's own Settings table cannot change it.
            return diskcache.Cache(
                str(path),
                disk=data_disk(note_problem),
                eviction_policy="none",
                size_limit=2**62,
                cull_limit=0,
                statistics=0,
                tag_index=0,
                disk_min_file_size=IN_ROW,
            )
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
        readonly = ReadOnlyCache.open(path)
        if readonly is not None:
            note_problem(
                f"response cache {path} is read-only ({reason}): stored answers are used, "
                "new answers are not saved"
            )
            return readonly
        note_problem(
            f"response cache {path} is unusable ({reason}): every request goes to the "
            "endpoint and nothing is saved"
        )
        return None

    def writable(self, namespace: str) -> bool:
        """A namespace this process could write (not read-only, not unusable)."""
        cache = self.namespace(namespace)
        return cache is not None and not isinstance(cache, ReadOnlyCache)

    # -- reads (inline) -----------------------------------------------------------------
    def fresh(self, value: Any) -> bool:
        """An answer this run may use (under --evals-refresh: only one written by this run)."""
        if not is_answer(value):
            return False
        return not self.refresh or value.get("run") == self.run_id

    def usable(self, value: Any) -> dict[str, Any] | None:
        """The answer held by an entry: the answer itself, or the one a claim displaced."""
        if self.fresh(value):
            return value
        if claim_of(value) is not None and self.fresh(value.get("previous")):
            return value["previous"]
        return None

    def get(self, namespace: str, key: str) -> dict[str, Any] | None:
        cache = self.namespace(namespace)
        if cache is None:
            return None
        try:
            value = cache.get(key)
        except Exception as exc:  # corrupt row, locked database...: a miss
            note_problem(f"response cache read error in {self.root / namespace} (treated as a miss): {type(exc).__name__}: {exc}")
            return None
        return self.usable(value)

    def peek_claim(self, namespace: str, key: str) -> Claim | None:
        cache = self.namespace(namespace)
        if cache is None:
            return None
        try:
            return claim_of(cache.get(key))
        except Exception:
            return None

    def answers(self, namespace: str) -> int:
        """Number of answers stored in a namespace (claims not counted)."""
        cache = self.namespace(namespace)
        if cache is None:
            return 0
        return sum(1 for key in cache.iterkeys() if is_answer(cache.get(key)))

    # -- writes (batched per event-loop turn) --------------------------------------------
    def _batcher(self) -> _Batcher:
        loop = asyncio.get_running_loop()
        batcher = self._batchers.get(loop)
        if batcher is None:
            batcher = self._batchers.setdefault(loop, _Batcher(self, loop))
        return batcher

    async def lookup_or_claim(self, namespace: str, key: str) -> tuple[Lookup, Any]:
        """("hit", value) | ("claimed", None) | ("busy", Claim), decided atomically."""
        cache = self.namespace(namespace)
        if cache is None:
            return "claimed", None
        if isinstance(cache, ReadOnlyCache):
            value = self.get(namespace, key)
            return ("hit", value) if value is not None else ("claimed", None)
        result: tuple[Lookup, Any] = await self._batcher().submit("claim", namespace, key, None)
        return result

    async def store(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        """Write an answer (and drop our claim on it)."""
        cache = self.namespace(namespace)
        if cache is None or isinstance(cache, ReadOnlyCache):
            return
        # Here as well as in the client: batch mode stores answers it read from files.
        stored = {
            **redaction.redact_obj(value),
            "v": VALUE_VERSION,
            "run": self.run_id,
            "created": time.time(),
        }
        await self._batcher().submit("store", namespace, key, stored)

    def release(self, namespace: str, key: str) -> None:
        """Drop our claim (the request failed or was cancelled), without waiting."""
        cache = self.namespace(namespace)
        if cache is None or isinstance(cache, ReadOnlyCache):
            return
        # No running loop (shutdown): the claim then expires on its own.
        with contextlib.suppress(RuntimeError):
            self._batcher().submit("release", namespace, key, None)

    def close(self) -> None:
        self._batchers.clear()
        with self._lock:
            caches, self._caches = self._caches, {}
        for cache in caches.values():
            if cache is not None:
                cache.close()

    # -- the transactional part (writer thread only) ------------------------------------
    def _apply(self, cache: diskcache.Cache, kind: str, key: str, value: Any) -> Any:
        if kind == "store":
            # Only the claim's owner stores, and a claim outlives the worst case of its
            # request, so what this replaces is our own claim: no need to read it.
            cache.set(key, value)
            return None
        current = cache.get(key)
        if kind == "claim":
            answer = self.usable(current)
            if answer is not None:
                return "hit", answer
            claim = claim_of(current)
            if claim is not None:
                if claim.mine or not claim.stale():
                    # Asked by another process (or another event loop of this one).
                    return "busy", claim
                previous = current.get("previous")
            else:
                previous = current if is_answer(current) else None
            cache.set(key, claim_record(new_claim(self.claim_ttl), previous))
            return "claimed", None
        if kind == "release":
            claim = claim_of(current)
            if claim is not None and claim.mine:
                previous = current.get("previous")
                if previous is not None:
                    cache.set(key, previous)
                else:
                    cache.delete(key)
            return None
        raise ValueError(kind)


@dataclass
class _Op:
    kind: str
    namespace: str
    key: str
    value: Any
    future: asyncio.Future[Any]


class _Batcher:
    """Applies the operations queued during one loop turn, one transaction per namespace."""

    def __init__(self, cache: ResponseCache, loop: asyncio.AbstractEventLoop) -> None:
        self.cache = cache
        self.loop = loop
        self.pending: list[_Op] = []
        self.commits = 0

    def submit(self, kind: str, namespace: str, key: str, value: Any) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = self.loop.create_future()
        if not self.pending:
            self.loop.call_soon(self.flush)
        self.pending.append(_Op(kind, namespace, key, value, future))
        return future

    def flush(self) -> None:
        batch, self.pending = self.pending, []
        by_namespace: dict[str, list[_Op]] = defaultdict(list)
        for op in batch:
            by_namespace[op.namespace].append(op)
        for namespace, ops in by_namespace.items():
            cache = self.cache.namespace(namespace)
            try:
                # Read-only and unusable namespaces never queue writes (see store/claim).
                assert cache is not None and not isinstance(cache, ReadOnlyCache)
                with cache.transact():
                    results = [self.cache._apply(cache, op.kind, op.key, op.value) for op in ops]
                self.commits += 1
            except Exception as exc:
                note_problem(
                    f"response cache {self.cache.root / namespace}: write failed, answers are "
                    f"not being saved ({type(exc).__name__}: {exc})"
                )
                # A failed lookup means "ask"; a failed store only loses the cached copy.
                results = [("claimed", None) if op.kind == "claim" else None for op in ops]
            for op, result in zip(ops, results, strict=True):
                if not op.future.done():
                    op.future.set_result(result)


class ReadOnlyCache:
    """Reads a diskcache directory this process may not write (read-only mount, another
    user's cache): answers found are still used, without locks or schema changes."""

    def __init__(self, connection: Any, directory: Path) -> None:
        self._db = connection
        self._disk = data_disk(note_problem)(str(directory))
        self._lock = threading.Lock()

    @classmethod
    def open(cls, directory: Path) -> ReadOnlyCache | None:
        import sqlite3

        db = directory / "cache.db"
        if not db.is_file():
            return None
        try:
            # immutable=1: no locks and no -wal/-shm files, which a read-only folder forbids.
            connection = sqlite3.connect(
                f"{db.resolve().as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False
            )
            connection.execute("SELECT key, raw, mode, filename, value FROM Cache LIMIT 1").fetchall()
        except Exception:
            return None
        return cls(connection, directory)

    def get(self, key: str, default: Any = None) -> Any:
        with self._lock:
            row = self._db.execute(
                "SELECT mode, filename, value FROM Cache WHERE key = ? AND raw = 1", (key,)
            ).fetchone()
        if row is None:
            return default
        mode, filename, value = row
        return self._disk.fetch(mode, filename, value, False)

    def iterkeys(self) -> Any:
        with self._lock:
            rows = self._db.execute("SELECT key FROM Cache WHERE raw = 1").fetchall()
        return iter(r[0] for r in rows)

    def close(self) -> None:
        self._db.close()
