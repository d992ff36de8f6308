"""The ``process`` transport: aiohttp in a helper process, so HTTP work runs on another core.

pytest runs items on one thread and the engine evaluates cases on another, and both hold
the same GIL. Measured on 2,000 judge calls (bench/bench_llm.py --pytest), aiohttp's own
work was 45% of the engine thread and the run was CPU-bound on one core while the second
sat idle. Here the in-process part of a request is encoding one frame and decoding the
reply (about 40 us); :class:`~pytest_evals.llm.transport.http_transport.AiohttpTransport` itself runs
unchanged in a child process (:func:`main`, run with this interpreter), so its behaviour
(body cap, status errors, Retry-After) is the ``aiohttp`` transport's. It is opt-in
(``--evals-transport process``): in paired whole runs it was no faster than aiohttp in
this process (bench/bench_llm.py --transport-pair, docs/llm.md).

The pipe carries frames (pipe_frames.py) over the child's stdin/stdout. The first frame
carries the endpoint and the Authorization header (a secret: it travels only through
the pipe, never argv, environment or disk); the child answers READY once aiohttp is
imported. With a response cache the child also applies the client's cache writes, on
the same pipe: :attr:`ProcessTransport.cache_ops` (helper_cache.py). A child that dies
fails its requests with a retryable error, and the next request starts a new one; a
child that cannot start fails them with what it printed. When this process ends, the
child reads end-of-file on stdin and exits, so a killed run leaves no helper behind
(Ctrl-C is left to the parent).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING, Any

from pytest_evals.llm.retry import AttemptError
from pytest_evals.llm.transport.helper_cache import CacheApplier, HelperCacheOps, helper_spec
from pytest_evals.llm.transport.http_transport import Completion
from pytest_evals.llm.transport.pipe_frames import (
    CACHE,
    CANCEL,
    FAILURE,
    HEADER,
    READY,
    REPLY,
    REQUEST,
    SETUP,
    Frames,
    dumps,
    frame,
    loads,
)

if TYPE_CHECKING:
    from pytest_evals.llm.cache import ResponseCache
    from pytest_evals.llm.call_stats import LLMStats
    from pytest_evals.llm.settings import LLMSettings

#: How long a starting child may take to import aiohttp and answer READY.
START_TIMEOUT = 60.0


# -- the parent side ---------------------------------------------------------------------------
class _ChildProtocol(asyncio.SubprocessProtocol):
    def __init__(self, relay: ProcessTransport) -> None:
        self.relay = relay
        self.frames = Frames()
        self.stderr = bytearray()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.relay._received(self.frames.feed(data))
        else:  # keep the tail of what the child printed: the message if it dies
            self.stderr += data
            del self.stderr[:-4000]

    def connection_lost(self, exc: Exception | None) -> None:
        # After the process exited and its pipes were read to the end: every reply the
        # child wrote before dying has been delivered.
        self.relay._child_exited(self)


class ProcessTransport:
    """Sends each request to the helper process and waits for its reply frame."""

    def __init__(
        self,
        settings: LLMSettings,
        stats: LLMStats | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        self._stats = stats
        self._setup = {
            "base_url": settings.base_url,
            "authorization": settings.authorization,
            "concurrency": settings.concurrency,
            "max_body": settings.max_body_bytes,
            "cache": None if cache is None else helper_spec(cache),
        }
        self._loop = asyncio.get_running_loop()
        self._child: asyncio.SubprocessTransport | None = None
        self._protocol: _ChildProtocol | None = None
        self._stdin: Any = None
        self._ready: asyncio.Future[None] | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        #: What each pending id waits for: a completion (REQUEST) or another reply (CACHE).
        self._wants_completion: set[int] = set()
        #: Frames written during this loop turn, sent in one write at its end (a write is
        #: a system call; a case sends two or three frames, and many cases run per turn).
        self._out: list[bytes] = []
        self._next_id = 0
        self._closed = False
        #: Helper processes started (a dead one is replaced on the next request).
        self.starts = 0
        #: The response cache's claims and stores, applied by the helper (None: no cache).
        self.cache_ops: HelperCacheOps | None = None if cache is None else HelperCacheOps(self)

    # -- the child's life -------------------------------------------------------------------
    async def _start(self) -> None:
        self.starts += 1
        if self._stats is not None:
            self._stats.helper_processes += 1
        ready = self._ready = self._loop.create_future()
        # Where this package was imported from, as a last resort on the child's path (a
        # checkout put on sys.path by other means than PYTHONPATH or an install).
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        code = f"import sys; sys.path.append({here!r}); from pytest_evals.llm.transport.process_transport import main; main()"
        transport, protocol = await self._loop.subprocess_exec(
            lambda: _ChildProtocol(self),
            sys.executable,
            "-c",
            code,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        self._child, self._protocol = transport, protocol
        self._stdin = transport.get_pipe_transport(0)
        self._stdin.write(frame(SETUP, 0, self._setup))
        try:
            await asyncio.wait_for(asyncio.shield(ready), START_TIMEOUT)
        except TimeoutError:
            self._kill()
            raise AttemptError(
                f"the HTTP helper process did not start within {START_TIMEOUT:g}s",
                retryable=False,
            ) from None

    async def start(self) -> None:
        """Start the helper now (LLMClient.prepare), not at the first request."""
        await self._ensure_child()

    async def _ensure_child(self) -> None:
        if self._closed:
            raise AttemptError("transport closed", retryable=False)
        if self._ready is None:
            await self._start()
        elif not self._ready.done():
            await asyncio.shield(self._ready)
        elif self._ready.exception() is not None:
            raise self._ready.exception()  # type: ignore[misc]

    def _child_exited(self, protocol: _ChildProtocol) -> None:
        if protocol is not self._protocol:
            return
        code = self._child.get_returncode() if self._child is not None else None
        said = protocol.stderr.decode("utf-8", "replace").strip()
        detail = f"the HTTP helper process exited (code {code})" + (
            f": {said[-600:]}" if said else ""
        )
        ready = self._ready
        if ready is not None and not ready.done():
            # It never started: starting another would fail the same way.
            ready.set_exception(AttemptError(detail, retryable=False))
            ready.exception()  # retrieved here; each request re-raises it
        else:
            self._ready = None  # the next request starts a new child
        self._child = self._protocol = self._stdin = None
        self._out.clear()
        pending, self._pending = self._pending, {}
        self._wants_completion.clear()
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(AttemptError(detail, retryable=True))

    def _received(self, frames: list[tuple[int, int, bytes]]) -> None:
        for kind, ident, payload in frames:
            if kind == READY:
                if self._ready is not None and not self._ready.done():
                    self._ready.set_result(None)
                continue
            fut = self._pending.pop(ident, None)
            completion = ident in self._wants_completion
            self._wants_completion.discard(ident)
            if fut is None or fut.done():
                continue  # cancelled meanwhile
            try:
                data = loads(payload)
                if kind == REPLY:
                    fut.set_result(Completion(*data) if completion else data)
                else:
                    cause, retryable, status, retry_after = data
                    fut.set_exception(
                        AttemptError(
                            cause, retryable=retryable, status=status, retry_after=retry_after
                        )
                    )
            except Exception as exc:  # one unreadable frame fails its request, not the others
                fut.set_exception(
                    AttemptError(f"unreadable reply from the HTTP helper: {exc}", retryable=True)
                )

    def _kill(self) -> None:
        child = self._child
        if child is not None:
            child.close()  # closes the pipes and kills the process if it still runs

    # -- the Transport protocol ----------------------------------------------------------------
    def _call(self, kind: int, payload: Any, completion: bool) -> tuple[int, asyncio.Future[Any]]:
        if self._stdin is None:
            raise AttemptError("the HTTP helper process is gone", retryable=True)
        # Id 0 is the replies nobody waits for (SETUP, READY, releases).
        self._next_id = ident = (self._next_id + 1) & 0xFFFFFFFF or 1
        fut: asyncio.Future[Any] = self._loop.create_future()
        self._pending[ident] = fut
        if completion:
            self._wants_completion.add(ident)
        self._write(frame(kind, ident, payload))
        return ident, fut

    def _write(self, data: bytes) -> None:
        if not self._out:
            self._loop.call_soon(self._flush)
        self._out.append(data)

    def _flush(self) -> None:
        out, self._out = self._out, []
        if out and self._stdin is not None:
            self._stdin.write(b"".join(out))

    async def send(self, body: dict[str, Any]) -> Completion:
        await self._ensure_child()
        ident, fut = self._call(REQUEST, [str(body.get("model")), body], completion=True)
        try:
            completion: Completion = await fut
            return completion
        finally:
            if self._pending.pop(ident, None) is not None and self._stdin is not None:
                # Cancelled (the deadline): stop the request in the child as well.
                self._wants_completion.discard(ident)
                self._write(HEADER.pack(0, ident, CANCEL))

    # -- the pipe, for the response cache's frames (helper_cache.py) ------------------------
    async def ask(self, kind: int, payload: Any) -> Any:
        """Send a frame and wait for the reply's payload. Raises AttemptError when the
        helper is unavailable."""
        await self._ensure_child()
        _ident, fut = self._call(kind, payload, completion=False)
        return await fut

    def tell(self, kind: int, payload: Any) -> None:
        """Send a frame nobody waits for; dropped when no helper runs."""
        if self._stdin is not None:
            self._write(frame(kind, 0, payload))

    async def aclose(self) -> None:
        self._closed = True
        child = self._child
        if child is None:
            return
        # Nothing is in flight that anyone waits for: end the helper now (a kill)
        # rather than wait for it to close its HTTP pool, which every run's end would
        # wait for; then only until it is reaped.
        child.close()
        for _ in range(200):
            if child.get_returncode() is not None:
                break
            await asyncio.sleep(0.005)


# -- the child side ------------------------------------------------------------------------------
async def _serve() -> None:
    from pytest_evals.llm.transport.http_transport import AiohttpTransport

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**31 - 1)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", 0)
    )
    out = os.fdopen(1, "wb", 0)
    write_transport, _ = await loop.connect_write_pipe(asyncio.Protocol, out)

    async def read_frame() -> tuple[int, int, bytes] | None:
        try:
            size, ident, kind = HEADER.unpack(await reader.readexactly(HEADER.size))
            return kind, ident, await reader.readexactly(size)
        except asyncio.IncompleteReadError:
            return None

    first = await read_frame()
    if first is None or first[0] != SETUP:
        return
    setup = loads(first[2])
    # This process stores answers too (the cache's writes): it masks what it knows, the
    # key and a gateway's ?key= in the base URL alike.
    from pytest_evals.llm.settings import register_query_credentials

    register_query_credentials(setup["base_url"])
    if setup["authorization"]:
        from pytest_evals.hardening import redaction

        redaction.register_header_value(setup["authorization"])
    http = AiohttpTransport.__new__(AiohttpTransport)
    http.setup(setup["base_url"], setup["authorization"], setup["concurrency"], setup["max_body"])
    cache = CacheApplier(setup["cache"]) if setup.get("cache") else None
    write_transport.write(HEADER.pack(0, 0, READY))
    running: dict[int, asyncio.Task[None]] = {}
    queued: list[bytes] = []

    def flush() -> None:
        data = b"".join(queued)
        queued.clear()
        write_transport.write(data)

    def send(reply: bytes) -> None:
        # Replies finished in one loop turn leave in one write (see ProcessTransport._write).
        if not queued:
            loop.call_soon(flush)
        queued.append(reply)

    pending_ops: set[asyncio.Task[None]] = set()

    async def cache_op(ident: int, payload: bytes) -> None:
        try:
            op, namespace, key, value = loads(payload)
            assert cache is not None, "no response cache was set up"
            result = await cache.apply(op, namespace, key, value)
            if not ident:
                return  # a release: nobody waits for a reply
            reply = frame(REPLY, ident, cache.reply(result))
        except Exception as exc:
            cause = f"response cache in the helper: {type(exc).__name__}: {exc}"
            reply = frame(FAILURE, ident, [cause, True, None, None])
        if ident:
            send(reply)

    async def one(ident: int, payload: bytes) -> None:
        try:
            model, body = loads(payload)
            c = await http.post(dumps(body), model)
            reply = frame(
                REPLY,
                ident,
                [c.text, c.model, c.prompt_tokens, c.completion_tokens, c.finish_reason, c.logprobs],
            )
        except AttemptError as exc:
            reply = frame(FAILURE, ident, [exc.cause, exc.retryable, exc.status, exc.retry_after])
        except Exception as exc:  # anything else the HTTP stack raises mid-request
            reply = frame(FAILURE, ident, [f"{type(exc).__name__}: {exc}", True, None, None])
        finally:
            running.pop(ident, None)
        send(reply)

    while (got := await read_frame()) is not None:
        kind, ident, payload = got
        if kind == REQUEST:
            running[ident] = loop.create_task(one(ident, payload))
        elif kind == CACHE:
            # Never cancelled: each is one SQLite transaction away, and a claim left
            # half-done would make other processes wait for it.
            pending_ops.add(task := loop.create_task(cache_op(ident, payload)))
            task.add_done_callback(pending_ops.discard)
        elif kind == CANCEL and ident in running:
            running.pop(ident).cancel()
    for task in running.values():
        task.cancel()
    await asyncio.gather(*running.values(), *pending_ops, return_exceptions=True)
    await http.aclose()
    if cache is not None:
        cache.close()


def main() -> None:
    import signal

    # Only frames go to stdout: anything printed by accident goes to stderr instead.
    sys.stdout = sys.stderr
    # Ctrl-C is the parent's to handle; this process ends when the parent closes stdin.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    asyncio.run(_serve())


if __name__ == "__main__":
    main()
