"""The one slot where the run learns that the LLM layer is about to wait on I/O.

The layer calls :func:`before_io` just before real I/O: the client on a cache miss,
before it joins or sends a request (with the request's namespace, cache key and body),
the offline judge before it hands texts to its encoding thread (without key or body:
nothing a batch could answer). It calls :func:`counted` with the undo of a side effect
it has just counted (a cache hit in the usage totals).

The layer does not know who listens. The worker installs an :class:`IOHook` for as long
as it needs one: its inline evaluation ends an attempt on pytest's thread that would
wait (and takes back the hits it counted, since the case is evaluated again on the
engine); batch mode records the request for a batch instead of sending it, and turns
requests whose batch lines failed for good into errors. A hook stops the caller by
raising, a BaseException where the evaluation must end unseen by tasks' own ``except
Exception`` handlers.

Hooks are process-wide (the engine's loop thread and pytest's thread both call them);
one that concerns a single evaluation keeps its state in a context variable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol


class IOHook(Protocol):
    def before_io(self, namespace: str, key: str | None, body: Mapping[str, Any] | None) -> None:
        """Called before the I/O; raise to stop it. ``key``/``body``: the model request
        about to be sent (None for other I/O)."""

    def counted(self, undo: Callable[[], None]) -> None:
        """A side effect was just counted; ``undo`` takes it back."""


#: The installed hooks, in installation order (a tuple: replaced, never mutated, so a
#: reader on another thread sees either the old or the new one).
_hooks: tuple[IOHook, ...] = ()


def install(hook: IOHook) -> None:
    """Add ``hook`` (once: installing it again changes nothing)."""
    global _hooks
    if not any(h is hook for h in _hooks):
        _hooks = (*_hooks, hook)


def uninstall(hook: IOHook) -> None:
    global _hooks
    _hooks = tuple(h for h in _hooks if h is not hook)


def installed() -> tuple[IOHook, ...]:
    return _hooks


def before_io(
    namespace: str, key: str | None = None, body: Mapping[str, Any] | None = None
) -> None:
    """Called by the layer just before real I/O; a hook may raise to stop it."""
    for hook in _hooks:
        hook.before_io(namespace, key, body)


def counted(undo: Callable[[], None]) -> None:
    """Called by the layer after counting a side effect that ``undo`` takes back."""
    for hook in _hooks:
        hook.counted(undo)
