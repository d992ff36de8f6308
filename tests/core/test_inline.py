"""inline.attempt: run an evaluation on the calling thread only if it never waits."""

from __future__ import annotations

import asyncio

from pytest_evals.worker import inline_eval as inline


def test_a_coroutine_that_never_waits_completes_with_its_value() -> None:
    async def compute() -> int:
        return 6 * 7

    assert inline.attempt(compute()) == (True, 42)


def test_require_io_ends_the_attempt_and_undoes_in_reverse_order() -> None:
    undone: list[str] = []
    reached: list[str] = []

    async def evaluation() -> str:
        inline.on_abort(lambda: undone.append("first hit"))
        inline.on_abort(lambda: undone.append("second hit"))
        try:
            inline.require_io()
            reached.append("after require_io")
        except Exception:  # a task's broad handler must not swallow the signal
            reached.append("swallowed")
        return "never"

    assert inline.attempt(evaluation()) == (False, None)
    assert undone == ["second hit", "first hit"]
    assert reached == []


def test_a_coroutine_that_suspends_is_closed_and_undone() -> None:
    undone: list[int] = []
    cleaned: list[bool] = []

    async def waits() -> None:
        inline.on_abort(lambda: undone.append(1))
        try:
            await asyncio.sleep(0)  # yields to an event loop there is none of
        finally:
            cleaned.append(True)

    assert inline.attempt(waits()) == (False, None)
    assert undone == [1] and cleaned == [True]


def test_outside_an_attempt_nothing_is_signalled_or_recorded() -> None:
    undone: list[int] = []

    async def completes() -> None:
        inline.on_abort(lambda: undone.append(1))

    assert inline.attempt(completes()) == (True, None)
    # The attempt's marker stayed in its own context copy: the caller is not in one.
    inline.require_io()
    inline.on_abort(lambda: undone.append(2))
    assert undone == []


def test_the_llm_layers_io_hook_reaches_an_attempt_and_only_during_it() -> None:
    """The LLM layer knows no runner: it calls llm/io_hooks.py, where an attempt installs
    its hook for as long as it runs."""
    from pytest_evals.llm import io_hooks

    before = io_hooks.installed()
    undone: list[str] = []

    async def evaluation() -> None:
        io_hooks.counted(lambda: undone.append("hit"))
        io_hooks.before_io("ns", "key", {"model": "m"})

    assert inline.attempt(evaluation()) == (False, None)
    assert undone == ["hit"]
    assert io_hooks.installed() == before
    io_hooks.before_io("ns", "key", {"model": "m"})  # outside an attempt: nothing happens
