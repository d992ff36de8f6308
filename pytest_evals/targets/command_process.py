"""One run of a command target: its own process group, a deadline, bounded output.

A target command is someone else's program, often a shell line (``sh -c '...'``) or a
framework's task runner that starts children of its own. Three things hold whatever it
does:

- *the deadline covers its children*: the command starts a new session (its own process
  group); at the timeout, and whenever its run ends, the whole group is killed, so
  ``sh -c 'sleep 1000; echo {}'`` stops at the timeout and nothing it started outlives
  the case (or pytest);
- *the run ends when the command exits*: a child left behind (a daemon) may keep the
  output pipes open; what the command printed before exiting is its output, and the run
  does not wait for the pipes to close (asyncio's ``wait()`` would, until the timeout);
- *output is bounded*: stdout beyond the cap (the size cap of a model's response body)
  ends the run as an error; stderr keeps only its tail, which is all an error shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass

#: How long the output pipes may stay open after the command exited: what it printed is
#: already in them; only a child it left behind writes later.
DRAIN_SECONDS = 1.0
#: stderr is only shown as the tail of an error message.
STDERR_TAIL_BYTES = 64 * 1024
_CHUNK = 65536


@dataclass
class Finished:
    status: int
    stdout: bytes
    stderr_tail: bytes


class CommandTimeout(Exception):
    pass


class OutputTooLarge(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"printed more than {limit} bytes on stdout")
        self.limit = limit


def kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the command's process group (gone already: nothing to do). Without
    process groups (Windows) only the command itself can be killed."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        elif proc.returncode is None:
            proc.kill()


async def run_command(
    argv: list[str], payload: bytes, *, cwd: str, env: dict[str, str], timeout: float, max_output: int
) -> Finished:
    """Run ``argv`` with ``payload`` on stdin. Raises :class:`OSError` when it cannot start,
    :class:`CommandTimeout` and :class:`OutputTooLarge`; the group is killed in every case."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stdout, stderr = bytearray(), bytearray()
    overflow = False

    async def feed() -> None:
        assert proc.stdin is not None
        # A command may exit or close stdin without reading it: its status says how it went.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(payload)
            await proc.stdin.drain()
            proc.stdin.close()

    async def read_stdout(stream: asyncio.StreamReader) -> None:
        nonlocal overflow
        while chunk := await stream.read(_CHUNK):
            stdout.extend(chunk)
            if len(stdout) > max_output:
                overflow = True
                del stdout[max_output:]
                kill_group(proc)
                return

    async def read_stderr(stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(_CHUNK):
            stderr.extend(chunk)
            if len(stderr) > 2 * STDERR_TAIL_BYTES:
                del stderr[:-STDERR_TAIL_BYTES]

    readers = [asyncio.ensure_future(read_stdout(proc.stdout)), asyncio.ensure_future(read_stderr(proc.stderr))]
    feeder = asyncio.ensure_future(feed())
    try:
        try:
            status = await asyncio.wait_for(_exited(proc), timeout)
        except asyncio.TimeoutError:
            raise CommandTimeout from None
        await asyncio.wait(readers, timeout=DRAIN_SECONDS)
    finally:
        kill_group(proc)
        for task in (*readers, feeder):
            task.cancel()
        await asyncio.gather(*readers, feeder, return_exceptions=True)
    if overflow:
        raise OutputTooLarge(max_output)
    return Finished(status, bytes(stdout), bytes(stderr[-STDERR_TAIL_BYTES:]))


async def _exited(proc: asyncio.subprocess.Process) -> int:
    """The command's exit status as soon as it exits, even while a child it left behind
    holds its pipes open (``Process.wait()`` also waits for the pipes)."""
    waiter = asyncio.ensure_future(proc.wait())
    try:
        while proc.returncode is None:
            await asyncio.wait({waiter}, timeout=0.05)
        return proc.returncode
    finally:
        waiter.cancel()
