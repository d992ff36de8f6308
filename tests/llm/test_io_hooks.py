"""llm/io_hooks.py: the one slot where the run hears that the LLM layer is about to do I/O."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from pytest_evals.llm import LLMClient, io_hooks
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import closing, run

MakeClient = Callable[..., LLMClient]


class Stop(BaseException):
    """What a hook raises to end an evaluation (like the inline attempt's NeedsIO)."""


class Recorder:
    def __init__(self, stop: bool = False) -> None:
        self.stop = stop
        self.seen: list[tuple[str, str | None, Any]] = []
        self.undos: list[Callable[[], None]] = []

    def before_io(self, namespace: str, key: str | None, body: Mapping[str, Any] | None) -> None:
        self.seen.append((namespace, key, body))
        if self.stop:
            raise Stop("stopped before I/O")

    def counted(self, undo: Callable[[], None]) -> None:
        self.undos.append(undo)


@pytest.fixture
def hook() -> Iterator[Recorder]:
    recorder = Recorder()
    io_hooks.install(recorder)
    yield recorder
    io_hooks.uninstall(recorder)


def test_install_is_idempotent_and_keeps_the_order() -> None:
    first, second = Recorder(), Recorder()
    before = io_hooks.installed()
    io_hooks.install(first)
    io_hooks.install(second)
    io_hooks.install(first)
    try:
        assert io_hooks.installed() == (*before, first, second)
        io_hooks.before_io("offline")
        assert first.seen == second.seen == [("offline", None, None)]
    finally:
        io_hooks.uninstall(first)
        io_hooks.uninstall(second)
    assert io_hooks.installed() == before


def test_a_miss_is_announced_with_its_request_and_a_hit_is_counted(
    make_client: MakeClient, server: FakeOpenAI, hook: Recorder
) -> None:
    client = make_client()

    async def go() -> tuple[bool, bool]:
        first = await client.chat("hello", namespace="t")
        again = await client.chat("hello", namespace="t")
        return first.cached, again.cached

    assert run(closing(client, go())) == (False, True)
    key = client.key_for(client.build_request("hello"))
    assert hook.seen == [("t", key, client.build_request("hello"))]
    # The hit's count can be taken back (an inline attempt that later needs I/O).
    assert client.stats.cache_hits == 1 and len(hook.undos) == 1
    hook.undos[0]()
    assert client.stats.cache_hits == 0


def test_a_hook_that_raises_stops_the_request(make_client: MakeClient, server: FakeOpenAI) -> None:
    client = make_client()
    stopper = Recorder(stop=True)
    io_hooks.install(stopper)
    try:
        with pytest.raises(Stop, match="stopped before I/O"):
            run(closing(client, client.chat("hello", namespace="t")))
    finally:
        io_hooks.uninstall(stopper)
    assert server.stats()["received"] == 0
    assert client.stats.requests == 0 and client.stats.cache_misses == 0


def test_the_batch_gate_ignores_io_that_is_no_model_request() -> None:
    from pytest_evals.llm.batch import batch_gate as gate

    class Writer:
        def __init__(self) -> None:
            self.added: list[str] = []

        def add(self, namespace: str, key: str, body: Mapping[str, Any]) -> None:
            self.added.append(key)

    writer = Writer()
    token = gate.gathering(writer)
    try:
        gate.GATE.before_io("offline", None, None)  # the offline judge's encoding
        with pytest.raises(gate.BatchPending):
            gate.GATE.before_io("t", "k1", {"model": "m"})
    finally:
        gate.stop_gathering(token)
    assert writer.added == ["k1"]
    gate.GATE.before_io("t", "k2", {"model": "m"})  # not gathering: passes
    assert writer.added == ["k1"]
